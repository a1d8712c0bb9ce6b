// Keeps what the user opened or closed when htmx swaps in a fresh fragment:
// every <details id=...> in the swapped region gets back its open/closed state.
(function () {
  "use strict";
  var remembered = {};

  document.addEventListener("toggle", function (event) {
    var target = event.target;
    if (target.tagName === "DETAILS" && target.id) {
      remembered[target.id] = target.open;
    }
  }, true);

  document.addEventListener("htmx:afterSwap", function (event) {
    var region = event.detail && event.detail.target;
    if (!region || !region.querySelectorAll) { return; }
    region.querySelectorAll("details[id]").forEach(function (details) {
      if (Object.prototype.hasOwnProperty.call(remembered, details.id)) {
        details.open = remembered[details.id];
      }
    });
  });
})();
