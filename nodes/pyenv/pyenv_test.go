package pyenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIndexFollowsPipThenUv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "https://pypi.org/simple/"},
		{map[string]string{"UV_DEFAULT_INDEX": "https://c/simple"}, "https://c/simple"},
		{map[string]string{"UV_INDEX_URL": "https://b/simple", "UV_DEFAULT_INDEX": "https://c/simple"}, "https://b/simple"},
		{map[string]string{"PIP_INDEX_URL": "https://a/simple", "UV_INDEX_URL": "https://b/simple"}, "https://a/simple"},
	} {
		if got := Index(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %s, want %s", c.env, got, c.want)
		}
	}
}

func TestInterpreterIsLookedUpInTheRunsPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "python3")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notexec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env     map[string]string
		want    string
		wantErr bool
	}{
		{env: map[string]string{"PATH": "/nonexistent:" + dir}, want: exe},
		{env: map[string]string{"PATH": dir, "LACUNA_PYTHON": "/opt/py/bin/python3.12"}, want: "/opt/py/bin/python3.12"},
		{env: map[string]string{"PATH": dir, "LACUNA_PYTHON": "notexec"}, wantErr: true},
		{env: map[string]string{"PATH": ""}, wantErr: true},
	} {
		got, err := interpreter(func(k string) string { return c.env[k] })
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%v: %q, %v; want %q (error %v)", c.env, got, err, c.want, c.wantErr)
		}
	}
}

func TestBaseInstallIsMountedUnlessTheSystemHasIt(t *testing.T) {
	for exe, want := range map[string]string{
		"/usr/bin/python3.11":                         "",
		"/usr/local/bin/python3":                      "",
		"/root/.pyenv/versions/3.11.7/bin/python3.11": "/root/.pyenv/versions/3.11.7",
		"/opt/conda/bin/python3":                      "/opt/conda",
	} {
		if got := baseInstall(exe); got != want {
			t.Errorf("baseInstall(%s) = %q, want %q", exe, got, want)
		}
	}
}
