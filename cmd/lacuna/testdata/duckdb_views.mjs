// Reads a lacuna export with real DuckDB through views.sql and prints
// query results as JSON lines. Used by TestExportOpensInDuckDB.
//   node duckdb_views.mjs EXPORT_DIR
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';
process.chdir(process.argv[2]);
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
for (const stmt of fs.readFileSync('views.sql', 'utf8').split('\n').filter(l => l.startsWith('CREATE'))) {
  await c.run(stmt);
}
for (const q of [
  "select count(*) as n from sample",
  "select count(*) as n from concat",
  "select typeof(id) as t from import limit 1",
]) {
  const r = await c.runAndReadAll(q);
  console.log(JSON.stringify(r.getRowObjectsJson()[0]));
}
