// Refreshes the runs table while any run is queued or running, so a verdict arrives without a reload.
(function () {
  const box = document.getElementById("runs");
  if (!box) return;
  const live = () => box.querySelector("table[data-live='true']") !== null;
  async function refresh() {
    if (!live()) return;
    try {
      const response = await fetch(box.dataset.src, { headers: { "X-Requested-With": "fetch" } });
      if (response.ok) box.innerHTML = await response.text();
    } catch (e) { /* the next tick tries again */ }
    if (live()) setTimeout(refresh, 2000);
  }
  setTimeout(refresh, 2000);
})();
