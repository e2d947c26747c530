// The demo host page's own script (web/embed-demo.html): loads the widgets from the origin
// ?from= names and wires the page's dark toggle and its prose to the figures.
// The widgets' site: ?from=http://host:port/ (read as an address, nothing else), by default
// the one scripts/serve_demo.sh starts. The bundle runs as a script of this page's origin, and
// scripts/run.sh and serve.sh serve this page from the article's own origin: a link naming any
// other site would run that site's code there, and what it wrote into the Cache API would outlast
// the visit (security review F1). So only this machine's addresses are accepted; any other
// loads nothing, and the page says why.
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

// The widgets' site that ?from= names, or why it was refused.
function widgetsSite(given) {
  let url;
  try {
    url = new URL(given);
  } catch {
    return { refusal: 'it is not an address' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { refusal: 'it is not an http or https address' };
  if (!LOOPBACK.has(url.hostname)) return { refusal: `its host ${url.hostname} is not this machine` };
  return { from: url.href };
}

const given = new URLSearchParams(location.search).get('from');
const { from, refusal } = given === null ? { from: 'http://127.0.0.1:8000/' } : widgetsSite(given);
if (refusal) {
  const message = document.createElement('p');
  message.id = 'refused';
  message.setAttribute('role', 'alert');
  message.textContent = `The address in ?from= (\u201c${given}\u201d) was refused because ${refusal}: this demo loads the widgets\u2019 script only from 127.0.0.1, localhost or [::1], since that script runs with this page\u2019s origin. No figure is loaded.`;
  document.querySelector('header').prepend(message);
  document.getElementById('origin').textContent = 'nowhere (the address was refused)';
} else {
  const src = new URL('dist/attention-widgets.js', from).href;
  const script = document.createElement('script');
  script.type = 'module';
  script.src = src;
  document.head.append(script);
  document.getElementById('snippet').textContent = `<script type="module" src="${src}"><\/script>\n<attention-row sentence="The keys to the cabinet are on the table." word="are" layer="2" head="3"></attention-row>`;
  document.getElementById('origin').textContent = new URL(from).origin;
}
document.getElementById('dark').addEventListener('click', (event) => {
  const dark = document.documentElement.classList.toggle('dark');
  event.target.setAttribute('aria-pressed', String(dark));
});
// The figures say what the reader chose (README: "Events"); the prose follows.
document.addEventListener('attention-change', (event) => {
  const { word, layer, head } = event.detail;
  document.getElementById('reading').textContent = `You are reading \u201c${word}\u201d in layer ${layer}, head ${head}.`;
});
