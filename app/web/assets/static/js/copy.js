// Copy buttons: <button data-copy="ID"> copies the text of element ID to the clipboard.
// Delegated from the document so buttons in htmx-swapped fragments work too.
(function () {
  "use strict";

  function flash(button, label) {
    var original = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", original);
    button.textContent = label;
    window.setTimeout(function () { button.textContent = original; }, 1500);
  }

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-copy]") : null;
    if (!button) { return; }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    var text = source.textContent;
    var failed = function () {
      selectText(source);
      flash(button, button.getAttribute("data-failed") || "");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () {
        flash(button, button.getAttribute("data-copied") || "");
      }, failed);
    } else {
      failed();
    }
  });
})();
