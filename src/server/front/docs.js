// Renders the API reference from this server's own /openapi.json with the vendored Swagger UI.
// A separate file rather than an inline script, so the page runs under a CSP that allows
// scripts from this origin only.
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    // The default sends the document to an online validator; this page stays offline.
    validatorUrl: null,
    // A token typed into "Authorize" lives only as long as the tab (not in localStorage).
    persistAuthorization: false,
    displayRequestDuration: true,
  });
});
