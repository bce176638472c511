// The .hlox manifest's JSON Schema, imported from the file the Python side writes and ships
// (workbench/assets/hlox-manifest.schema.json, made by workbench/artifacts/manifest.py's json_schema()):
// one description of the manifest, read by both. The bundler and vitest load it as a JSON module.
declare module '*/workbench/assets/hlox-manifest.schema.json' {
  const schema: { $schema: string; $id: string; title: string; [keyword: string]: unknown };
  export default schema;
}
