// Tells the server when a trial is displayed, the start of its timing. Loading a
// page changes nothing on the server, so the page itself reports that it was seen;
// the server keeps the first report only, so a reload does not restart the clock.
(function () {
  const form = document.getElementById("shown");
  fetch(form.action, {
    method: "POST",
    body: new FormData(form),
    credentials: "same-origin",
    keepalive: true, // still delivered when the participant clicks on at once
  });
})();
