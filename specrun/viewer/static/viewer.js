// The viewer's only script: it shows and hides rows (status buttons, text filters) and reads no
// data; every page works without it. Loaded from /static/, the only script the CSP allows.
(function () {
  function words(el) {
    if (el.specrunText === undefined) el.specrunText = el.textContent.toLowerCase();
    return el.specrunText;
  }
  document.querySelectorAll("[data-filter-list]").forEach(function (box) {
    var list = document.getElementById(box.getAttribute("data-filter-list"));
    if (!list) return;
    var items = Array.prototype.slice.call(list.querySelectorAll("[data-status]"));
    var buttons = Array.prototype.slice.call(box.querySelectorAll("button[data-status-filter]"));
    var input = box.querySelector("input[type=search]");
    var shown = box.querySelector(".shown");
    var status = "all";
    function apply() {
      var text = input ? input.value.trim().toLowerCase() : "";
      var n = 0;
      items.forEach(function (el) {
        var ok = (status === "all" || el.getAttribute("data-status") === status) &&
          (!text || words(el).indexOf(text) !== -1);
        el.hidden = !ok;
        if (ok) n += 1;
      });
      if (shown) shown.textContent = n + " of " + items.length + " shown";
    }
    buttons.forEach(function (b) {
      b.addEventListener("click", function () {
        status = b.getAttribute("data-status-filter");
        buttons.forEach(function (x) { x.setAttribute("aria-pressed", String(x === b)); });
        apply();
      });
    });
    if (input) input.addEventListener("input", apply);
    apply();
  });
})();
