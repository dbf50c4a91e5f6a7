// The reviewer's token and name live in this tab only (sessionStorage), are sent as a bearer
// header on a verdict (never as a cookie, so no other site can post one), and a token handed
// over in the address's fragment (#token=…) is taken and removed from the address bar.
(function () {
  var store = window.sessionStorage;
  var m = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (m) {
    store.setItem("gw-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  document.addEventListener("DOMContentLoaded", function () {
    var token = document.getElementById("gw-token");
    var who = document.getElementById("gw-who");
    if (token) {
      token.value = store.getItem("gw-token") || "";
      token.addEventListener("input", function () { store.setItem("gw-token", token.value); });
    }
    if (who) {
      who.value = store.getItem("gw-who") || who.value;
      who.addEventListener("input", function () { store.setItem("gw-who", who.value); });
    }
  });
  document.addEventListener("htmx:configRequest", function (e) {
    if (e.detail.verb !== "post") return;
    var t = store.getItem("gw-token");
    if (t) e.detail.headers["Authorization"] = "Bearer " + t;
    var who = document.getElementById("gw-who");
    if (who && who.value) e.detail.parameters["who"] = who.value;
  });
  function say(text) {
    var box = document.getElementById("gw-error");
    if (!box) return;
    box.textContent = text;
    box.hidden = !text;
  }
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr, text = xhr.statusText;
    try { text = JSON.parse(xhr.responseText).detail; } catch (err) { /* not JSON */ }
    if (typeof text !== "string") text = JSON.stringify(text);
    say(xhr.status + ": " + text);
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    if (e.detail.successful && e.detail.requestConfig && e.detail.requestConfig.verb === "post") say("");
  });
})();
