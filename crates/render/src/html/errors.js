window.onerror = function (msg, src, line) {
  var e = document.getElementById('js-errors') || document.documentElement;
  e.setAttribute('data-errors', (e.getAttribute('data-errors') || '') + msg + ' (line ' + line + '); ');
};
