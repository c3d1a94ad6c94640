// Keeps the leaderboard table current while runs finish and reviews land, without reloading the page.
(function () {
  const box = document.getElementById("leaderboard-table");
  if (!box) return;
  const src = box.dataset.src;
  async function refresh() {
    if (document.visibilityState === "visible") {
      try {
        const response = await fetch(src, { headers: { "X-Requested-With": "fetch" } });
        if (response.ok) {
          const holder = document.createElement("div");
          holder.innerHTML = await response.text();
          const fresh = holder.querySelector("#leaderboard-table");
          if (fresh && fresh.innerHTML !== box.innerHTML) box.innerHTML = fresh.innerHTML;
        }
      } catch (e) { /* the next tick tries again */ }
    }
    setTimeout(refresh, 10000);
  }
  setTimeout(refresh, 10000);
})();
