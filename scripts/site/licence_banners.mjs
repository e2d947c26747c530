// The licence banners of the files an embedding site copies: the widgets' bundle
// (web/dist/attention-widgets.js, esbuild's `banner`, scripts/site/build_embed.mjs) and the
// engine's Emscripten glue (web/engine/attention_engine.js, prepended when
// scripts/site/build_site.mjs copies it from build/wasm). `/*!` comments survive minifiers.
// README.md, "Licence", says what an embedding site must keep; tests/js/licence.test.mjs checks.
import { readFileSync, writeFileSync } from 'node:fs';

// The licence sentence every banner holds; tests/js/licence.test.mjs looks for it.
export const LICENCE_LINE = 'Licensed under the Apache License, Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0).';

export const WIDGETS_BANNER = `/*! Attention explainer widgets: <attention-row>, <attention-heads>, <attention-compare>,
 * <softmax-lab>, <attention-precision>, <attention-instrument>, <attention-mechanism>.
 * See the README, "Embedding a figure in another site".
 * Copyright 2026 The attention explainer authors.
 * ${LICENCE_LINE}
 * Third-party notices: the NOTICE file of the attention explainer's repository. The default
 * model's weights (models/explainer-mini*.attn) are GPL-2.0-or-later (model_data/README.md,
 * "Licence"); a model file states its own terms in its provenance. */`;

// The article's and the posts' bundles (web/app/, scripts/site/build_pages.mjs).
export const PAGES_BANNER = `/*! Attention explainer: the article's and its series' pages.
 * Copyright 2026 The attention explainer authors.
 * ${LICENCE_LINE}
 * Third-party notices: the NOTICE file of the attention explainer's repository. */`;

export const ENGINE_BANNER = `/*! Attention explainer engine: the project's C++ core compiled to WebAssembly with Emscripten.
 * Copyright 2026 The attention explainer authors.
 * ${LICENCE_LINE}
 * This glue is Emscripten's runtime (Copyright 2010-2022 The Emscripten Authors; MIT or
 * University of Illinois/NCSA Open Source License). attention_engine.wasm also holds Eigen
 * (MPL-2.0), musl libc (MIT), libc++, libc++abi and compiler-rt (Apache-2.0 WITH LLVM-exception)
 * and tables from the Unicode Character Database (Unicode License). Notices: NOTICE. */`;

// Copies a JavaScript file with `banner` and a new line in front of it.
export function copyWithBanner(source, destination, banner) {
  writeFileSync(destination, `${banner}\n${readFileSync(source, 'utf8')}`);
}
