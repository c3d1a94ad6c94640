// Draws every chart on the page from the JSON figure next to it (see templates/leaderboard/_figures.html).
(function () {
  function draw() {
    document.querySelectorAll("[data-figure]").forEach(function (box) {
      if (box.dataset.drawn) return;
      const source = document.getElementById(box.dataset.figure);
      if (!source || !window.Plotly) return;
      const figure = JSON.parse(source.textContent);
      window.Plotly.newPlot(box, figure.data, figure.layout, { responsive: true, displaylogo: false });
      box.dataset.drawn = "1";
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw); else draw();
})();
