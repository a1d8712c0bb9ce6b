// Every <time data-when> in the viewer's time zone and the page's language: "3 min ago"
// (or the date, past a day), the exact local time on hover. Runs again after htmx swaps.
(function () {
  "use strict";
  var lang = document.documentElement.lang || "en";
  var units = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];

  function relative(seconds) {
    var words = new Intl.RelativeTimeFormat(lang, { numeric: "auto" });
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(seconds) >= units[i][1] || units[i][0] === "second") {
        return words.format(Math.round(seconds / units[i][1]), units[i][0]);
      }
    }
    return "";
  }

  function render(root) {
    var exact = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "medium" });
    var nodes = (root || document).querySelectorAll("time[data-when]");
    for (var i = 0; i < nodes.length; i++) {
      var moment = new Date(nodes[i].getAttribute("datetime"));
      if (isNaN(moment.getTime())) continue;
      var ago = (moment.getTime() - Date.now()) / 1000;
      nodes[i].textContent = Math.abs(ago) < 86400 ? relative(ago) : exact.format(moment);
      nodes[i].title = exact.format(moment);
    }
  }

  document.addEventListener("DOMContentLoaded", function () { render(document); });
  document.addEventListener("htmx:afterSettle", function (event) { render(event.target); });
})();
