// While any run of the submission waits or is judged: refreshes the runs table (state, stage, queue
// position) and ticks each run's elapsed time; when the last verdict arrives, draws the charts and
// removes the new submission's message. All without reloading the page.
(function () {
  const box = document.getElementById("runs");
  if (!box) return;
  const POLL_MS = 2000;
  const live = () => box.querySelector("table[data-live='true']") !== null;
  let fetchedAt = Date.now();

  function stopwatch(seconds) {  // as the stopwatch template filter (submissions/templatetags/dates.py)
    const s = Math.floor(seconds), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    const two = (n) => String(n).padStart(2, "0");
    return (h ? h + ":" + two(m) : String(m)) + ":" + two(s % 60);
  }

  function tick() {
    const since = (Date.now() - fetchedAt) / 1000;
    box.querySelectorAll("[data-elapsed-s]").forEach(function (el) {
      el.textContent = stopwatch(Number(el.dataset.elapsedS) + since);
    });
  }

  function removeJudgingMessages() {
    document.querySelectorAll(".message.judging").forEach((message) => message.remove());
  }

  async function showCharts() {
    const charts = document.getElementById("charts");
    if (!charts) return;
    try {
      const response = await fetch(charts.dataset.src, { headers: { "X-Requested-With": "fetch" } });
      if (response.ok) {
        charts.innerHTML = await response.text();
        if (window.drawCharts) window.drawCharts();
      }
    } catch (e) { /* the charts stay as they were; a reload shows them */ }
  }

  // a reason being typed for a cancel: replacing the table would lose it
  function typing() {
    return Array.from(box.querySelectorAll("form.cancel-own-run input[name='reason']"))
      .some((input) => input === document.activeElement || input.value !== "");
  }

  let ticking = null;
  async function refresh() {
    if (typing()) {
      setTimeout(refresh, POLL_MS);
      return;
    }
    try {
      const response = await fetch(box.dataset.src, { headers: { "X-Requested-With": "fetch" } });
      if (response.ok) {
        box.innerHTML = await response.text();
        fetchedAt = Date.now();
      }
    } catch (e) { /* the next tick tries again */ }
    if (live()) {
      setTimeout(refresh, POLL_MS);
    } else {
      clearInterval(ticking);
      removeJudgingMessages();
      showCharts();
    }
  }

  if (live()) {
    ticking = setInterval(tick, 1000);
    setTimeout(refresh, POLL_MS);
  } else {
    removeJudgingMessages();  // judged before the page was shown
  }
})();
