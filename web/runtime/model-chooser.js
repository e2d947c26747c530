// The model chooser, on the article and every post: the model the page ships with, any BERT on
// the Hugging Face hub (a repository id, with suggestions), or a checkpoint folder or files from
// the reader's computer. Before a download it says which files it will fetch and their size (the
// hub's listing), and asks; bert-base's 440 MB gets a warning on a phone. The download runs in
// the engine's worker beside the page's engine, whose figures go on meanwhile, with its bytes
// and a cancel button; a model the engine refuses leaves the page as it was, with the reason.
// Once the new model has loaded (and its files are in the browser's cache), the page reloads on
// it: the choice is in the hash (hf=ID@COMMIT, or local=KEY for files from this computer), with
// the rest of the page's state, so a permalink reopens it. All text goes in as text nodes.
import { loadEngine } from '../engine/engine.js';
import { checkpointFromHash, formatHubChoice, hubFromAddress, MODEL_HASH_KEYS, parseHubChoice } from '../engine/model_address.js';
import { h } from '../widgets/dom.js';
import { writeHash } from './state.js';
import { megabytes } from '../widgets/format.js';

// The repositories the chooser suggests: Google's bert-mini in its three uploads, the tiny one,
// and bert-base in both cases (440 MB: the chooser warns on a phone).
export const HUB_SUGGESTIONS = Object.freeze([
  'prajjwal1/bert-mini', 'google/bert_uncased_L-4_H-256_A-4', 'gaunernst/bert-mini-uncased',
  'prajjwal1/bert-tiny', 'bert-base-uncased', 'bert-base-cased',
]);

// A download this large gets a warning where the screen is a phone's.
const LARGE_ON_A_PHONE = 100e6;
const onAPhone = () => globalThis.matchMedia?.('(pointer: coarse)').matches || (globalThis.innerWidth ?? 1000) < 700;

// The page's address with its model key set to {key: value} (or removed), the rest kept.
function addressWith(key, value) {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  for (const k of MODEL_HASH_KEYS) params.delete(k);
  if (key) params.set(key, value);
  const hash = params.toString();
  return `${location.pathname}${location.search}${hash ? `#${hash}` : ''}`;
}

// The one place a page's model key changes (writeHash keeps it in every other link): the page
// then reloads on it.
function reloadOn(key, value) {
  history.replaceState(null, '', addressWith(key, value));
  location.reload();
}

// The summary line the pages' HTML holds (a closed <details id="model-chooser">, so that the
// page does not move when this module fills it in).
export const CHOOSER_SUMMARY = 'Run another BERT: from the Hugging Face hub or your computer';

// Fills the page's <details id="model-chooser"> (root) with the chooser.
export function modelChooser(root) {
  const choice = checkpointFromHash();
  const hub = hubFromAddress();
  const status = h('p.chooser-status', { role: 'status', 'aria-live': 'polite' });
  const progress = h('progress', { max: '100', value: '0', hidden: true, 'aria-label': 'Download of the chosen model' });
  const plan = h('div.chooser-plan');
  let controller = null;
  const say = (text, state = '') => {
    status.textContent = text;
    status.dataset.state = state;
  };
  const busy = (on) => {
    for (const el of root.querySelectorAll('input, button:not(.chooser-cancel)')) el.disabled = on;
    cancel.hidden = !on;
    progress.hidden = !on;
  };
  const cancel = h('button.chooser-cancel', { type: 'button', text: 'Cancel the download', hidden: true, on: { click: () => controller?.abort() } });

  // Loads options in an engine of its own; on success the page reloads on `key`'s value, which
  // `value(engine)` gives from the loaded engine.
  async function run(options, what, key, value) {
    controller = new AbortController();
    busy(true);
    say(`Downloading ${what}\u2026`, 'loading');
    let engine = null;
    try {
      engine = await loadEngine(options, {
        signal: controller.signal,
        onProgress: (p) => {
          if (p.phase !== 'model') return;
          progress.value = p.percent ?? 0;
          say(`Downloading ${what}: ${megabytes(p.loaded)}${p.total ? ` of ${megabytes(p.total)}` : ''}\u2026`, 'loading');
        },
      });
      // A cancel pressed while the model was being made and loaded (after the last byte) still
      // counts: the page stays on the model it had.
      if (controller.signal.aborted) {
        engine.close();
        busy(false);
        say('The download was cancelled; the model you had keeps running.');
        return;
      }
      const to = value(engine);
      const kept = engine.info.checkpoint?.kept !== false;
      engine.close();
      if (!to || !kept) {
        say('The model loaded, but this browser did not let the page keep its files (its storage is full or refused), so the page cannot reopen on it without downloading it again. Free some space and try again.', 'error');
        busy(false);
        return;
      }
      say(`${what} loaded; the page reopens on it\u2026`, 'live');
      reloadOn(key, to);
    } catch (error) {
      engine?.close();
      busy(false);
      say(error.kind === 'cancelled' ? error.message : `${what} could not be used: ${error.message} The model you had keeps running.`, error.kind === 'cancelled' ? '' : 'error');
    }
  }

  async function lookUp(event) {
    event.preventDefault();
    plan.replaceChildren();
    const asked = parseHubChoice(input.value);
    if (!asked) {
      say('Write a repository id such as prajjwal1/bert-mini, optionally with @ and a revision.', 'error');
      return;
    }
    say(`Asking the hub about ${asked.id}\u2026`, 'loading');
    try {
      // The hub's client and the checkpoint table load only now, when a repository is looked up.
      const [{ checkpointFiles, hubModelInfo }, { checkpointTable }] = await Promise.all([import('../engine/hub.js'), import('../engine/checkpoint.js')]);
      const [info, table] = await Promise.all([hubModelInfo(hub, asked), checkpointTable()]);
      const files = checkpointFiles(info, table.files);
      // Small files in kB: "config.json (0.0 MB)" says nothing.
      const size = (bytes) => (bytes < 1e5 ? `${Math.max(1, Math.round(bytes / 1e3))} kB` : megabytes(bytes));
      const list = files.files.map((f) => `${f.name} (${size(f.size ?? 0)})`).join(', ');
      const large = files.bytes > LARGE_ON_A_PHONE && onAPhone();
      const id = formatHubChoice({ id: info.id, revision: info.commit });
      say('');
      plan.replaceChildren(...[
        h('p', {}, `${info.id} at commit ${info.commit.slice(0, 10)}: ${list}; ${megabytes(files.bytes)} in all, downloaded by your browser from ${new URL(hub).host} and kept in its cache.`),
        large ? h('p.chooser-warning', { text: `This is a large download for a phone, and the model needs about ${megabytes(3 * files.bytes)} of memory while it loads; on a phone it may fail or take minutes.` }) : null,
        info.gated ? h('p.chooser-warning', { text: `The hub marks ${info.id} as gated: its owner asks readers to log in and accept terms, so the hub will likely refuse the download (this page does not log in).` }) : null,
        h('button.primary', { type: 'button', text: `Download ${megabytes(files.bytes)} and run it`, on: { click: () => run({ checkpoint: { hub, id: info.id, revision: info.commit } }, info.id, 'hf', () => id) } }),
      ].filter(Boolean));
    } catch (error) {
      say(error.message, 'error');
    }
  }

  function openFiles(event) {
    const chosen = [...event.target.files].map((file) => ({ name: file.webkitRelativePath || file.name, blob: file }));
    event.target.value = '';
    if (!chosen.length) return;
    // The model is named by its folder, or by the files' names when they were chosen one by one.
    const folder = chosen[0].name.includes('/') ? chosen[0].name.split('/')[0] : null;
    const label = folder ?? `your files (${chosen.map((c) => c.name).sort().join(', ')})`.slice(0, 100);
    plan.replaceChildren();
    run({ checkpoint: { files: chosen, label } }, folder ? `the model in ${folder}` : 'the model in your files', 'local', (engine) => engine.info.checkpoint?.local);
  }

  const input = h('input', { type: 'text', id: 'hub-model', list: 'hub-suggestions', autocomplete: 'off', spellcheck: 'false', placeholder: HUB_SUGGESTIONS[0], value: choice?.id ? formatHubChoice(choice) : '' });
  const suggestions = h('datalist', { id: 'hub-suggestions' }, HUB_SUGGESTIONS.map((id) => h('option', { value: id })));
  const running = !choice ? 'This page runs the model it ships with.'
    : choice.id ? `This page runs ${choice.id}${choice.revision === 'main' ? '' : ` at ${choice.revision.slice(0, 10)}`} from the hub.` : 'This page runs a model opened from this computer.';
  const summary = root.querySelector('summary') ?? h('summary', { text: CHOOSER_SUMMARY });
  root.replaceChildren(summary,
    h('p', {}, `${running} Any BERT checkpoint with a masked-LM head fills every figure (one without it fills all but the predictions). The model is downloaded by your browser and runs there; nothing is sent anywhere.`),
    h('form.chooser-hub', { on: { submit: lookUp } },
      h('label', { for: 'hub-model', text: 'A model on the hub' }),
      h('span.row', {}, input, suggestions, h('button', { type: 'submit', text: 'Look it up' }))),
    plan,
    h('p.chooser-files', {},
      h('label', {}, 'Or a checkpoint folder on this computer (config.json, vocab.txt, the weights): ',
        h('input', { type: 'file', webkitdirectory: true, on: { change: openFiles } })),
      ' ',
      h('label', {}, 'or its files: ', h('input', { type: 'file', multiple: true, accept: '.json,.txt,.safetensors,.bin', on: { change: openFiles } }))),
    h('p.chooser-progress', {}, progress, ' ', cancel),
    status,
    ...(choice ? [h('p', {}, h('button', { type: 'button', text: 'Back to the model this page ships with', on: { click: () => reloadOn(null) } }))] : []));
  return root;
}

// The page's model chooser (<details id="model-chooser">, closed in the page's HTML) is filled in
// when the reader first opens it; the checkpoint readers load only when a model is looked up.
export function wireModelChooser(root = globalThis.document?.getElementById('model-chooser')) {
  if (!root || root.dataset.wired) return;
  root.dataset.wired = '1';
  root.addEventListener('toggle', () => {
    if (!root.open || root.dataset.filled) return;
    root.dataset.filled = '1';
    modelChooser(root);
  });
}

// A page opened on #hf=ID (a branch, the hub's newest commit) pins its link to the commit it
// loaded, so that the link keeps giving these weights: #hf=ID@COMMIT. info: the engine's.
export function pinChosenCommit(info) {
  const loaded = info?.checkpoint;
  const asked = checkpointFromHash();
  if (!loaded?.commit || !asked?.id || asked.revision === loaded.commit) return;
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  params.set('hf', formatHubChoice({ id: loaded.id, revision: loaded.commit }));
  writeHash(`#${params}`);
}
