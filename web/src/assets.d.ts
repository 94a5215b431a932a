// esbuild bundles imported stylesheets into app.css
declare module "*.css";
