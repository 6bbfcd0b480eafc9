# Every column kind lacuna writes, exported and read back by DuckDB and
# pandas in TestExportReadsInDuckDBAndPandas: strings, int64, float64,
# bool, nulls, JSON lists and objects (scalars.jsonl), and Parquet lists,
# repeated values and nested groups (nested.parquet, written by the test).

node "import" "scalars" {
  path = "scalars.jsonl"
}

node "import" "nested" {
  path = "nested.parquet"
}

# for_each instances, one with a space in its key.
node "filter" "by_name" {
  for_each = toset(["alpha", "a b"])
  input    = node.import.scalars
  where    = row.name == each.value
}

node "sample" "two" {
  input = node.import.scalars
  n     = 2
  seed  = 1
}

node "concat" "picked" {
  inputs        = values(node.filter.by_name)
  source_column = "from"
}
