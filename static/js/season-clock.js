// Ticks each season's countdown (templates/submissions/_season_clock.html) from the seconds the server
// counted when it rendered the page, not from this computer's clock: a wrong clock here cannot make a
// season look open or ended. When a countdown reaches 0 the line moves on: starts in → ends in → ended.
// Each time also gets the reader's own local time as its tooltip.
(function () {
  if (window.seasonClockTicking) return;  // a page with several seasons loads this once per line
  window.seasonClockTicking = true;
  const loadedAt = Date.now();

  function countdown(seconds, daysPattern) {  // as submissions/season_clock.countdown
    const s = Math.max(0, Math.floor(seconds)), days = Math.floor(s / 86400), rest = s % 86400;
    const two = (n) => String(n).padStart(2, "0");
    const clock = two(Math.floor(rest / 3600)) + ":" + two(Math.floor((rest % 3600) / 60)) + ":" + two(rest % 60);
    return days ? daysPattern.replace("%(days)s", days).replace("%(clock)s", clock) : clock;
  }

  function tick() {
    const elapsed = (Date.now() - loadedAt) / 1000;
    document.querySelectorAll(".season-clock[data-to-start-s]").forEach(function (line) {
      const toStart = Number(line.dataset.toStartS) - elapsed;
      const toEnd = line.dataset.toEndS === "" ? null : Number(line.dataset.toEndS) - elapsed;
      const phase = toStart > 0 ? "upcoming" : (toEnd !== null && toEnd <= 0 ? "ended" : "running");
      line.dataset.phase = phase;
      line.querySelectorAll(".clock-phase").forEach(function (part) { part.hidden = part.dataset.phase !== phase; });
      line.querySelectorAll(".countdown").forEach(function (value) {
        const left = value.dataset.until === "start" ? toStart : toEnd;
        value.textContent = countdown(left, line.dataset.daysPattern);
      });
    });
  }

  function localTimes() {
    document.querySelectorAll(".season-clock time[datetime]").forEach(function (time) {
      time.title = new Date(time.getAttribute("datetime")).toLocaleString();
    });
  }

  function start() {
    localTimes();
    tick();
    setInterval(tick, 1000);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
