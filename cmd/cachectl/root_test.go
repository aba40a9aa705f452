package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

func TestHelp(t *testing.T) {
	for _, cmd := range [][]string{{}, {"get"}, {"info"}, {"check"}, {"compact"}, {"migrate"}, {"snapshot"}, {"snapshot", "save"}, {"snapshot", "restore"}, {"snapshot", "status"}, {"version"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			r := cachectl(t, append(cmd, "--help")...).ok(t)
			for _, want := range []string{"Usage:", "Examples:", "cachectl"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("help lacks %q:\n%s", want, r.stdout)
				}
			}
		})
	}
	if r := cachectl(t).ok(t); !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("no arguments: %q", r.stdout)
	}
}

// TestUsageErrors: a usage error is one line naming the mistake and the
// help to read, and exits 1, as kubectl's do (its cmdutil.CheckErr, and
// component-base's cli.Run for flag errors, exit 1 for every error).
func TestUsageErrors(t *testing.T) {
	cachectl(t, "gte").failed(t, 1, `unknown command "gte"`, `did you mean "get"?`)
	cachectl(t, "--nope").failed(t, 1, "unknown flag: --nope")
	// The flag belongs to the command meant: the name is the mistake.
	cachectl(t, "inf", "--db", "x").failed(t, 1, `unknown command "inf" for "cachectl"`, `did you mean "info"?`)
	cachectl(t, "snapshot", "sav", "x").failed(t, 1, `unknown command "sav"`, `did you mean "save"?`)
	cachectl(t, "info", "--timeout", "0s", "--db", fixtureFile).failed(t, 1, "--timeout must be positive")
}

func TestCompletion(t *testing.T) {
	if r := cachectl(t, "completion", "bash").ok(t); !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("bash: %.200q", r.stdout)
	}
	if r := cachectl(t, "completion", "zsh").ok(t); !strings.Contains(r.stdout, "#compdef cachectl") {
		t.Errorf("zsh: %.200q", r.stdout)
	}
	// Resource names come from the file.
	r := cachectl(t, "__complete", "get", "--db", fixtureFile, "")
	for _, want := range []string{"pods\n", "configmaps\n", "widgets.example.com\n", ":4\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("completion lacks %q: %q", want, r.stdout)
		}
	}
	_, sock := liveCache(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Namespaces of every store's objects.
		{[]string{"get", "pods", "-n", ""}, "default\nkube-system\nteam-a\n:4\n"},
		// Names in the namespace get would read: the default, -n, -A.
		{[]string{"get", "pods", ""}, "db-0\nweb-0\nweb-1\n:4\n"},
		{[]string{"get", "pods", "-n", "kube-system", ""}, "dns-0\n:4\n"},
		{[]string{"get", "po", "-A", ""}, "db-0\ndns-0\njob-7\nweb-0\nweb-1\n:4\n"},
		{[]string{"get", "pods", "-l", "app=web", ""}, "web-0\nweb-1\n:4\n"},
		{[]string{"get", "cm/"}, "cm/app-config\n:4\n"},
		{[]string{"get", "gadgets", ""}, "gizmo\n:4\n"},
	} {
		for _, src := range []string{"--db=" + fixtureFile, "--socket=" + sock} {
			if strings.HasPrefix(src, "--socket") && tc.args[1] == "gadgets" {
				continue // not served by the live process
			}
			args := append([]string{"__complete", tc.args[0], src}, tc.args[1:]...)
			r := cachectl(t, args...)
			if got := strings.Split(r.stdout, "Completion ended")[0]; got != tc.want {
				t.Errorf("%v: %q, want %q", args, got, tc.want)
			}
		}
	}
}

// TestPluginName: run as kubectl-cache (the plugin of "kubectl cache"),
// help, usage errors and examples name the command as the user typed it.
func TestPluginName(t *testing.T) {
	plugin := runOpts{name: "kubectl-cache"}
	r := cachectlWith(t, plugin, "get", "--help").ok(t)
	for _, want := range []string{"Usage:\n  kubectl cache get RESOURCE", "  kubectl cache get pods --db cache.db"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "cachectl get") {
		t.Errorf("help still says cachectl get:\n%s", r.stdout)
	}
	cachectlWith(t, plugin, "gte").failed(t, 1, `unknown command "gte" for "kubectl cache"`, "'kubectl cache --help'")
	cachectlWith(t, plugin, "get", "pods", "--nope").failed(t, 1, "'kubectl cache get --help'")
	if r := cachectlWith(t, plugin, "get", "pods", "-o", "name", "--db", fixtureFile).ok(t); r.stdout != "pod/db-0\npod/web-0\npod/web-1\n" {
		t.Errorf("get: %q", r.stdout)
	}
}

func TestVersion(t *testing.T) {
	r := cachectl(t, "version").ok(t)
	if !strings.HasPrefix(r.stdout, "Client Version: ") || !strings.Contains(r.stdout, fmt.Sprintf("Schema Version: v%d (reads and writes v%[1]d; migrates from v0)\n", cachefile.Version)) {
		t.Errorf("text: %q", r.stdout)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(cachectl(t, "version", "-o", "json").ok(t).stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.Schema.Current != cachefile.Version || v.Schema.OldestMigratable != 0 || v.ClientVersion.GitVersion == "" || v.ClientVersion.Writer != cachefile.WriterVersion {
		t.Errorf("json: %+v", v)
	}
	if r := cachectl(t, "version", "-o", "yaml").ok(t); !strings.Contains(r.stdout, fmt.Sprintf("schemaVersion:\n  current: %d\n  oldestMigratable: 0\n", cachefile.Version)) {
		t.Errorf("yaml: %q", r.stdout)
	}
	cachectl(t, "version", "-o", "xml").failed(t, 1, `unknown output format "xml"`)
	cachectl(t, "version", "extra").failed(t, 1, "version takes no arguments")
}
