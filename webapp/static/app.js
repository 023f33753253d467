// jobgauge form helpers: copy buttons, and picking "your query" when one is pasted.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy"));
      var text = source ? source.textContent : "";
      var done = function () {
        var label = button.textContent;
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { selectText(source); });
      } else {
        selectText(source);
        try { document.execCommand("copy"); done(); } catch (e) { /* text stays selected */ }
      }
    });
  });
  var sql = document.getElementById("sql");
  var workload = document.getElementById("workload");
  if (sql && workload) {
    sql.addEventListener("input", function () {
      if (sql.value.trim() !== "") { workload.value = "sql"; }
    });
  }
});

function selectText(node) {
  if (!node) { return; }
  var range = document.createRange();
  range.selectNodeContents(node);
  var selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}
