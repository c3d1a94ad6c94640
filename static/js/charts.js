// Draws every chart on the page from the JSON figure next to it (see templates/leaderboard/_figures.html).
// A page without plotly.js names it on this script's tag (data-plotly): it is loaded when a chart needs
// it, e.g. a submission's charts, which arrive with its verdict. window.drawCharts() draws new ones.
(function () {
  const plotlySrc = document.currentScript && document.currentScript.dataset.plotly;
  let loading = null;

  function withPlotly(then) {
    if (window.Plotly) return then();
    if (!plotlySrc) return;
    if (!loading) {
      loading = document.createElement("script");
      loading.src = plotlySrc;
      document.head.appendChild(loading);
    }
    loading.addEventListener("load", then);
  }

  function draw() {
    if (!document.querySelector("[data-figure]:not([data-drawn])")) return;
    withPlotly(function () {
      document.querySelectorAll("[data-figure]:not([data-drawn])").forEach(function (box) {
        const source = document.getElementById(box.dataset.figure);
        if (!source) return;
        const figure = JSON.parse(source.textContent);
        window.Plotly.newPlot(box, figure.data, figure.layout, { responsive: true, displaylogo: false });
        box.dataset.drawn = "1";
      });
    });
  }

  window.drawCharts = draw;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw); else draw();
})();
