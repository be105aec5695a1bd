(function () {
  var out = document.getElementById('chart-check');
  var ok = true, lines = [];
  document.querySelectorAll('figure.chart').forEach(function (f) {
    var want = Number(f.getAttribute('data-series'));
    var svg = f.querySelector('svg');
    var got = svg ? svg.querySelectorAll('polyline[stroke-width="2"]').length : 0;
    var box = svg ? svg.getBoundingClientRect() : null;
    var width = box ? box.width : 0;
    var outside = [];
    if (svg) {
      svg.querySelectorAll('text').forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1 ||
            r.top < box.top - 1 || r.bottom > box.bottom + 1)) {
          outside.push(JSON.stringify(t.textContent.trim()));
        }
      });
    }
    var good = svg && want > 0 && got === want && width > 100 && outside.length === 0;
    if (!good) { ok = false; }
    lines.push(f.id + ' want=' + want + ' got=' + got + ' width=' + Math.round(width) +
      (outside.length ? ' cut-off=' + outside.join(',') : '') + (good ? ' ok' : ' BAD'));
  });
  out.textContent = lines.join('\n');
  out.setAttribute('data-charts', String(lines.length));
  out.setAttribute('data-ok', ok && lines.length > 0 ? 'true' : 'false');
})();
