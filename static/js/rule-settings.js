// The season settings page (templates/organizer/season_settings.html): of a rule form's fieldsets, one
// per rule, only the chosen rule's is shown. Without JavaScript every fieldset shows, and the site
// reads the chosen rule's fields alone.
(function () {
  document.querySelectorAll("form.rule-form").forEach(function (form) {
    var select = form.querySelector("select[name$='-rule']");
    if (!select) return;
    function show() {
      form.querySelectorAll("fieldset.rule-settings").forEach(function (set) {
        set.hidden = set.dataset.rule !== select.value;
      });
    }
    select.addEventListener("change", show);
    show();
  });
})();
