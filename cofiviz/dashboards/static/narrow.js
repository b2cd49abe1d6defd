/* cofiviz: on a screen narrower than 768 px a page's sidebar starts closed (its menu button opens it). */
document.addEventListener("DOMContentLoaded", function () {
  if (window.innerWidth >= 768) {
    return;
  }
  var sidebar = document.getElementById("sidebar");
  if (sidebar !== null) {
    sidebar.classList.remove("show");
  }
  var toggle = document.getElementById("sidebar-toggle");
  if (toggle !== null) {
    toggle.setAttribute("aria-expanded", "false");
  }
});
