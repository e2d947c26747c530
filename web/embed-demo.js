// The demo host page's own script (web/embed-demo.html): loads the widgets from the origin
// ?from= names and wires the page's dark toggle and its prose to the figures.
// The widgets' site: ?from=http://host:port/ (read as an address, nothing else), by default
// the one scripts/serve_demo.sh starts.
let from = 'http://127.0.0.1:8000/';
try {
  const given = new URL(new URLSearchParams(location.search).get('from') ?? from);
  if (given.protocol === 'http:' || given.protocol === 'https:') from = given.href;
} catch {
  // Not an address: the default stays.
}
const src = new URL('dist/attention-widgets.js', from).href;
const script = document.createElement('script');
script.type = 'module';
script.src = src;
document.head.append(script);
document.getElementById('snippet').textContent = `<script type="module" src="${src}"><\/script>\n<attention-row sentence="The keys to the cabinet are on the table." word="are" layer="2" head="3"></attention-row>`;
document.getElementById('origin').textContent = new URL(from).origin;
document.getElementById('dark').addEventListener('click', (event) => {
  const dark = document.documentElement.classList.toggle('dark');
  event.target.setAttribute('aria-pressed', String(dark));
});
// The figures say what the reader chose (README: "Events"); the prose follows.
document.addEventListener('attention-change', (event) => {
  const { word, layer, head } = event.detail;
  document.getElementById('reading').textContent = `You are reading \u201c${word}\u201d in layer ${layer}, head ${head}.`;
});
