// The series' set statistics, computed when the site was built (scripts/site/make_sets.mjs: the
// core's `attention-cli profile` and `contribution` over web/posts/sentences.txt and the held-out
// web/posts/heldout.txt, and the pronoun study over web/posts/pronouns.tsv and its held-out
// cases) with the model the manifest's `sets` names, and
// checked to be that model's. Read by the posts and the article; fetched once per page.
import { DEFAULT_MANIFEST_URL, loadManifest } from './engine.js';

let loading = null;

// {set, entry, wordsUrl}: set is the file's content, entry the manifest's `sets` ({model,
// sha256, file, words, sentences}), wordsUrl the per-word measurement's address.
export function loadSetStatistics() {
  loading ??= (async () => {
    const manifest = await loadManifest(DEFAULT_MANIFEST_URL);
    const entry = manifest.sets;
    if (!entry?.file || !/^[0-9a-f]{64}$/.test(entry.sha256 ?? '')) throw new Error('This site was built without the set statistics (scripts/site/build_site.mjs writes them with the native CLI).');
    const url = new URL(entry.file, DEFAULT_MANIFEST_URL);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`The set statistics (${url.pathname}) did not download: the server answered ${response.status}.`);
    const set = await response.json();
    if (set.model?.sha256 !== entry.sha256) throw new Error('The set statistics on this site belong to another model file; rebuild the site.');
    return { set, entry, wordsUrl: new URL(entry.words, DEFAULT_MANIFEST_URL).href };
  })();
  loading.catch(() => {
    loading = null;  // a failed download is tried again by the next caller
  });
  return loading;
}
