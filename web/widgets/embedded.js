// Marks every figure as embedded before any is defined: the bundle's entry imports this first,
// so elements already in the host's page follow their own attributes from the moment they
// upgrade.
import { AttentionFigure } from './base.js';

AttentionFigure.embedded = true;
