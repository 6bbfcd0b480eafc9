package parametric

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/jobenv"
)

func init() { nodes.Register(editStatsType{}) }

// editStatsConfig:
//
//	node "edit_stats" "wikitext" {
//	  base    = "models/qwen2.5-coder-7b"
//	  corpus  = node.import.wikitext    # a text column
//	  layers  = [4, 5, 6, 7, 8]
//	  samples = 100000
//	}
type editStatsConfig struct {
	// Base is a Hugging Face model directory (relative to the pipeline's
	// directory); its content's digest enters the key.
	Base string `hcl:"base,optional"`
	// From is another train or edit node whose full model this one
	// starts from (ToolGen's Stage 2 after Stage 1).
	From *nodes.Ref `hcl:"from,optional"`
	// Python is the interpreter (see baseConfig).
	Python string `hcl:"python,optional"`
	// Threads bounds torch's CPU threads (0: torch's default).
	Threads *int `hcl:"threads,optional"`
	// Corpus is an input with a `text` column.
	Corpus nodes.Ref `hcl:"corpus"`
	Layers []int     `hcl:"layers"`
	// Samples bounds the corpus texts read (default: all).
	Samples *int `hcl:"samples,optional"`
}

// StatsRow is edit_stats' one output row.
type StatsRow struct {
	StatsBlob    string `parquet:"stats_blob"`
	BaseDigest   string `parquet:"base_digest"`
	CorpusDigest string `parquet:"corpus_digest"`
	Layers       string `parquet:"layers"`
	// Tokens is the number of key vectors the statistics average.
	Tokens      int64   `parquet:"tokens"`
	WallSeconds float64 `parquet:"wall_seconds" volatile:"wall-clock time of computing the statistics"`
	Manifest    string  `parquet:"manifest" volatile:"the script's manifest, which records its timings"`
}

type editStatsType struct {
	nodes.Static[editStatsConfig, StatsRow]
}

var (
	_ nodes.Typed         = editStatsType{}
	_ nodes.Documented    = editStatsType{}
	_ nodes.Validator     = editStatsType{}
	_ nodes.Resolver      = editStatsType{}
	_ nodes.ContainerType = editStatsType{}
)

func (editStatsType) Name() string           { return "edit_stats" }
func (editStatsType) Version() string        { return "1" }
func (editStatsType) RunsInContainers() bool { return true }
func (editStatsType) Doc() string {
	return "Computes the second moment E[k kᵀ] of the keys (the input of each MLP's output projection, down_proj) at `layers` over a corpus (an input with a `text` column; the MEMIT paper uses Wikitext-103), for MEMIT's and AlphaEdit's updates, with runners/parametric's edit script. " +
		"Its output is one row with stats_blob; the store keeps it keyed on the base model's content and the corpus, so every edit of that model reuses it (edit's stats attribute). Runs where train does (this machine, a container, a SLURM job); base, from and python as train's."
}

func (editStatsType) Validate(cfg any) error {
	c := cfg.(*editStatsConfig)
	if err := c.common().validate(); err != nil {
		return err
	}
	if err := validLayers(c.Layers); err != nil {
		return err
	}
	if c.Samples != nil && *c.Samples < 1 {
		return nodes.Errorf("samples", "Invalid samples", "samples must be at least 1.")
	}
	return nil
}

func validLayers(ls []int) error {
	if len(ls) == 0 {
		return nodes.Errorf("layers", "No layers", "name the layers whose MLPs are edited, e.g. layers = [4, 5, 6, 7, 8].")
	}
	seen := map[int]bool{}
	for _, l := range ls {
		if l < 0 || seen[l] {
			return nodes.Errorf("layers", "Invalid layers", "layers are distinct indices from 0; got %v.", ls)
		}
		seen[l] = true
	}
	return nil
}

func layerList(ls []int) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = strconv.Itoa(l)
	}
	return strings.Join(s, ",")
}

func (editStatsType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	return resolve(ctx, r)
}

func (t editStatsType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	p, ok := r.Pinned().(*scriptPin)
	if !ok {
		return errors.New("edit_stats: not resolved")
	}
	base, err := p.baseModel(r, c.common())
	if err != nil {
		return err
	}
	s := scriptRun{module: "edit", inputs: []nodes.Ref{c.Corpus}, mounts: map[string]string{"base": base.dir}}
	s.args = func(paths jobenv.Paths) []string {
		a := []string{"--stats-only", "--base", paths.Mounts["base"], "--corpus", paths.In + "/0.parquet", "--stats-out", paths.Out + "/stats", "--layers", layerList(c.Layers)}
		if c.Samples != nil {
			a = append(a, "--max-texts", strconv.Itoa(*c.Samples))
		}
		return a
	}
	// The script writes stats/ with its stats.json; a copy becomes the
	// node's manifest.
	s.arrange = func(out string) error {
		b, err := os.ReadFile(filepath.Join(out, "stats", "stats.json"))
		if err != nil {
			return errors.New("edit_stats: the script wrote no stats/stats.json")
		}
		return os.WriteFile(filepath.Join(out, "manifest.json"), b, 0o644)
	}
	outs, where, elapsed, err := p.run(ctx, r, c.common(), s)
	if err != nil {
		return err
	}
	m, text, err := manifest(r, outs)
	if err != nil {
		return err
	}
	o, ok := output(outs, "stats")
	if !ok || o.Kind != "dir" {
		return errors.New("edit_stats: the script wrote no stats/ directory")
	}
	row := StatsRow{StatsBlob: o.Blob, BaseDigest: base.digest, CorpusDigest: string(r.InputDigest(c.Corpus)), Layers: layerList(c.Layers), Manifest: text}
	row.Tokens = int64(num(m, "samples"))
	row.WallSeconds = elapsed.Seconds()
	if err := t.Write(r, []StatsRow{row}); err != nil {
		return err
	}
	r.Note("layers %s, %d keys; ran %s in %s", row.Layers, row.Tokens, where, elapsed)
	return nil
}

// common is what every script node has.
func (c *editStatsConfig) common() *baseConfig {
	return &baseConfig{Base: c.Base, From: c.From, Python: c.Python, Threads: c.Threads}
}
