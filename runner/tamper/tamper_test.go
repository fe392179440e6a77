package tamper

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCandidates(t *testing.T) {
	sc := Scope{WorkDir: "/app", PathDirs: PathDirs("/opt/venv/bin:/usr/bin")}
	tests := []struct {
		path string
		typ  byte
		want string
	}{
		{"/usr/bin/python3", 'f', KindTool},
		{"/usr/local/bin/pytest", 'l', KindTool},
		{"/opt/venv/bin/python", 'f', KindTool},
		{"/usr/lib/python3/dist-packages/evil.pth", 'f', KindPythonStartup},
		{"/opt/venv/lib/python3.11/site-packages/x.pth", 'f', KindPythonStartup},
		{"/tmp/x.pth", 'f', ""},
		{"/usr/lib/python3.11/sitecustomize.py", 'f', KindPythonStartup},
		{"/root/usercustomize.py", 'f', KindPythonStartup},
		{"/conftest.py", 'f', KindPytest},
		{"/pytest.ini", 'f', KindPytest},
		{"/usr/local/lib/python3.11/site-packages/_pytest/main.py", 'f', KindPytest},
		{"/usr/local/lib/python3.11/site-packages/pytest_forge.py", 'f', KindPytest},
		{"/tests/test_x.py", 'f', KindVerifierFiles},
		{"/logs/verifier/reward.txt", 'f', KindVerifierFiles},
		{"/solution/solve.sh", 'f', KindSolutionFiles},
		{"/etc/profile.d/forge.sh", 'f', KindShellStartup},
		{"/etc/ld.so.preload", 'f', KindShellStartup},
		{"/root/.bashrc", 'f', KindShellStartup},
		{"/etc/bash.bashrc", 'f', KindShellStartup},
		// The agent's own work, and what no verifier reads.
		{"/app/conftest.py", 'f', ""},
		{"/app/sitecustomize.py", 'f', ""},
		{"/app/bin/python3", 'f', ""},
		{"/etc/passwd", 'f', ""},
		{"/var/log/apt/history.log", 'f', ""},
		{"/home/bob/.bashrc", 'f', ""},
		{"/usr/bin", 'd', ""},
		{"/testsuite/x", 'f', ""},
		{"/usr/lib/python3/dist-packages/_pytest/__pycache__/main.cpython-311.pyc", 'f', ""},
		{"/tests/__pycache__/test_x.cpython-311.pyc", 'f', KindVerifierFiles},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := Candidates([]Change{{Type: tt.typ, Path: tt.path}}, sc)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			if assert.Len(t, got, 1) {
				assert.Equal(t, tt.want, got[0].Kind)
				assert.Equal(t, tt.path, got[0].Path)
				assert.NotEmpty(t, got[0].Evidence)
			}
		})
	}
}

// The oracle's /solution is flightdeck's upload; any other agent's is not.
func TestCandidatesSolutionForTheOracle(t *testing.T) {
	ch := []Change{{Type: 'f', Path: "/solution/solve.sh"}}
	assert.Empty(t, Candidates(ch, Scope{WorkDir: "/app", Oracle: true}))
	assert.Len(t, Candidates(ch, Scope{WorkDir: "/app"}), 1)
}

// A work dir of / is no exception: everything is judged.
func TestCandidatesRootWorkDir(t *testing.T) {
	got := Candidates([]Change{{Type: 'f', Path: "/usr/bin/python3"}}, Scope{WorkDir: "/", PathDirs: DefaultPath})
	assert.Len(t, got, 1)
}

func TestPathDirs(t *testing.T) {
	got := PathDirs("/opt/bin:relative:/usr/bin/:/usr/bin")
	assert.Equal(t, append([]string{"/opt/bin", "/usr/bin"}, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/sbin", "/bin"), got)
}

// A file whose content matches dpkg's record was installed by the package
// manager; one that differs from it, or has none, is a finding; the
// verifier's and the solution's directories are never the package
// manager's.
func TestJudge(t *testing.T) {
	cands := []Finding{
		{Path: "/usr/bin/jq", Kind: KindTool},
		{Path: "/usr/bin/python3", Kind: KindTool},
		{Path: "/usr/local/bin/forge", Kind: KindTool},
		{Path: "/tests/x", Kind: KindVerifierFiles},
	}
	recs := []Record{
		{Path: "/usr/bin/jq", Package: "jq", RecordMD5: "aa", ContentMD5: "aa"},
		{Path: "/usr/bin/python3", Package: "python3.11-minimal", RecordMD5: "aa", ContentMD5: "bb"},
		{Path: "/usr/local/bin/forge", Package: "", RecordMD5: "", ContentMD5: "cc"},
		{Path: "/tests/x", Package: "p", RecordMD5: "dd", ContentMD5: "dd"},
	}
	findings, installed := Judge(cands, recs)
	assert.Equal(t, []string{"/usr/bin/jq (jq)"}, installed)
	var paths []string
	for _, f := range findings {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"/usr/bin/python3", "/usr/local/bin/forge", "/tests/x"}, paths)
}

func TestUnwalked(t *testing.T) {
	all := Unwalked(PathDirs(""))
	assert.Contains(t, all, "/usr/share")
	assert.Contains(t, all, "/usr/lib/*-linux-gnu")
	got := Unwalked(PathDirs("/usr/share/dotnet:/usr/lib/x86_64-linux-gnu/tool/bin:/usr/local/bin"))
	assert.NotContains(t, got, "/usr/share", "a tree that holds a PATH dir is walked")
	assert.NotContains(t, got, "/usr/lib/*-linux-gnu")
	assert.Contains(t, got, "/var/cache")
}
