// Linking a figure to the host's prose, as a file (a page under a Content-Security-Policy without
// inline scripts loads it with <script type="module" src="attention-change.js"></script>): the
// figure with id "fig" tells the paragraph with id "reading" what the reader is looking at. It
// listens on the one figure, not on document, which hears every figure of the page. The
// README's "Events and properties" gives the event's fields.
document.getElementById('fig').addEventListener('attention-change', (e) => {
  const { word, layer, head } = e.detail;
  document.getElementById('reading').textContent = `You are reading "${word}" in layer ${layer}, head ${head}.`;
});
