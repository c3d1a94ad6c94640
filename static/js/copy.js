// A button[data-copy] copies the text of the element its data-copy selects, then says so (data-copied).
// Hidden until this runs: without JavaScript the text itself selects whole in one click.
(function () {
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    const source = document.querySelector(button.dataset.copy);
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", async function () {
      try {
        await navigator.clipboard.writeText(source.textContent);
      } catch (e) {  // no clipboard API outside a secure context (http to another host): select and copy
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        if (!document.execCommand("copy")) return;
      }
      button.textContent = button.dataset.copied;
    });
  });
})();
