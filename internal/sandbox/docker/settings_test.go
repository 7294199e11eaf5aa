package docker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/sandbox"
)

func TestSettings(t *testing.T) {
	parse := func(js string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		name  string
		json  string
		check func(t *testing.T, s settings)
		err   string
	}{
		{name: "defaults", json: `{}`, check: func(t *testing.T, s settings) {
			if s.Image != DefaultImage || !s.ReadOnlyRoot || s.User != "" || !cmp.Equal(s.CapDrop, []string{"ALL"}) {
				t.Errorf("%+v", s)
			}
		}},
		{name: "openclaw keys", json: `{"image":"openclaw-sandbox:bookworm-slim","workdir":"/workspace","user":"1000:1000",
			"network":"bridge","env":{"LANG":"C.UTF-8","N":1},"pidsLimit":256,"memory":"1g","memorySwap":"2g","cpus":1.5,
			"ulimits":{"nofile":{"soft":1024,"hard":2048},"nproc":256,"core":"0:0"},"tmpfs":["/tmp:size=64m"],
			"capDrop":["ALL"],"binds":["/srv/data:/data:ro","/srv/out:/out"],"dns":["1.1.1.1"],"extraHosts":["h:10.0.0.5"],
			"readOnlyRoot":true,"apparmorProfile":"talon","dangerouslyAllowExternalBindSources":false}`,
			check: func(t *testing.T, s settings) {
				want := settings{
					Image: DefaultImage, ContainerPrefix: "talon-sbx-", ReadOnlyRoot: true,
					Tmpfs: []string{"/tmp:size=64m"}, Network: "bridge", User: "1000:1000", CapDrop: []string{"ALL"},
					Env: []string{"LANG=C.UTF-8", "N=1"}, PidsLimit: 256, Memory: 1 << 30, MemorySwap: 2 << 30,
					NanoCPUs: 1_500_000_000,
					Ulimits: map[string]ulimit{
						"nofile": {"nofile", 1024, 2048}, "nproc": {"nproc", 256, 256}, "core": {"core", 0, 0},
					},
					SecurityOpt: []string{"apparmor=talon"}, DNS: []string{"1.1.1.1"}, ExtraHosts: []string{"h:10.0.0.5"},
					Binds: []sandbox.Mount{{Source: "/srv/data", Target: "/data", ReadOnly: true}, {Source: "/srv/out", Target: "/out"}},
				}
				if d := cmp.Diff(want, s); d != "" {
					t.Error(d)
				}
			}},
		{name: "memory bytes", json: `{"memory":536870912}`, check: func(t *testing.T, s settings) {
			if s.Memory != 512<<20 {
				t.Error(s.Memory)
			}
		}},
		{name: "unknown key", json: `{"imgae":"x"}`, err: "sandbox.docker.imgae: unknown setting"},
		{name: "host network", json: `{"network":"host"}`, err: `sandbox.docker.network: "host" would give`},
		{name: "container network", json: `{"network":"container:abc"}`, err: "another container's network"},
		{name: "workdir", json: `{"workdir":"/work"}`, err: "always work in /workspace"},
		{name: "gpus", json: `{"gpus":"all"}`, err: "GPUs are not supported"},
		{name: "bad memory", json: `{"memory":"lots"}`, err: `sandbox.docker.memory: "lots": want a size`},
		{name: "bad pids", json: `{"pidsLimit":0}`, err: "sandbox.docker.pidsLimit: 0: want a number above 0"},
		{name: "bad bind", json: `{"binds":["relative:/x"]}`, err: "must be absolute paths"},
		{name: "bind over workspace", json: `{"binds":["/srv:/workspace/x"]}`, err: "reserved"},
		{name: "bind over the agent mount", json: `{"binds":["/srv:/agent/../agent"]}`, err: "reserved"},
		{name: "bind beside the workspace", json: `{"binds":["/srv:/workspace2"]}`, check: func(t *testing.T, s settings) {
			if len(s.Binds) != 1 || s.Binds[0].Target != "/workspace2" {
				t.Errorf("binds %+v", s.Binds)
			}
		}},
		{name: "bad env name", json: `{"env":{"A-B":"x"}}`, err: `"A-B": not a variable name`},
		{name: "bad ulimit", json: `{"ulimits":{"nofile":{"soft":10,"hard":5}}}`, err: "soft <= hard"},
		{name: "bad image", json: `{"image":"../x"}`, err: "not an image reference"},
		{name: "bad prefix", json: `{"containerPrefix":"a/b"}`, err: "want letters"},
		{name: "tmpfs root", json: `{"tmpfs":["/"]}`, err: "other than /"},
		{name: "missing seccomp file", json: `{"seccompProfile":"/no/such.json"}`, err: "reading the profile"},
		{name: "tcp docker host", json: `{"socket":"tcp://10.0.0.1:2375"}`, err: "only unix:// sockets"},
		// Wrong types name the key and what it takes.
		{name: "flag not a bool", json: `{"readOnlyRoot":"yes"}`, err: `sandbox.docker.readOnlyRoot: "yes": want true or false`},
		{name: "image not a string", json: `{"image":5}`, err: "sandbox.docker.image: 5: want a string"},
		{name: "list not a list", json: `{"capDrop":"ALL"}`, err: `sandbox.docker.capDrop: "ALL": want a list of strings`},
		{name: "list of numbers", json: `{"dns":[1]}`, err: "sandbox.docker.dns: item 0: 1: want a string"},
		{name: "pids not a number", json: `{"pidsLimit":"many"}`, err: `sandbox.docker.pidsLimit: "many": want a number`},
		{name: "pids not whole", json: `{"pidsLimit":1.5}`, err: "sandbox.docker.pidsLimit: 1.5: want a whole number"},
		{name: "env not an object", json: `{"env":["A=1"]}`, err: `sandbox.docker.env: ["A=1"]: want an object of NAME: value`},
		{name: "env value an object", json: `{"env":{"A":{}}}`, err: "sandbox.docker.env: A: want a string"},
		{name: "ulimit with another key", json: `{"ulimits":{"nofile":{"soft":1,"hrad":2}}}`, err: "sandbox.docker.ulimits: nofile:"},
		{name: "unknown key set to null", json: `{"imgae":null}`, err: "sandbox.docker.imgae: unknown setting"},
		{name: "first key in order", json: `{"zz":1,"image":5}`, err: "sandbox.docker.image: 5: want a string"},
		{name: "null keeps the default", json: `{"capDrop":null,"image":null,"tmpfs":null,"readOnlyRoot":null}`, check: func(t *testing.T, s settings) {
			if d := cmp.Diff(defaults(t), s); d != "" {
				t.Error(d)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(parse(tt.json))
			s, perr := parseSettings(parse(tt.json))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || perr != nil {
				t.Fatal(err, perr)
			}
			tt.check(t, s)
		})
	}
}

// defaults are the settings of an empty sandbox.docker.
func defaults(t *testing.T) settings {
	t.Helper()
	s, err := parseSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSocketPath(t *testing.T) {
	tests := []struct{ setting, env, want, err string }{
		{want: DefaultSocket},
		{env: "unix:///run/user/1000/docker.sock", want: "/run/user/1000/docker.sock"},
		{setting: "/tmp/d.sock", env: "unix:///x.sock", want: "/tmp/d.sock"},
		{env: "ssh://host", err: "DOCKER_HOST"},
		{setting: "rel.sock", err: "absolute"},
	}
	for _, tt := range tests {
		got, err := socketPath(tt.setting, tt.env)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q %q: err %v, want %q", tt.setting, tt.env, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q %q: %q %v, want %q", tt.setting, tt.env, got, err, tt.want)
		}
	}
}

func TestDemux(t *testing.T) {
	frame := func(stream byte, s string) []byte {
		b := []byte{stream, 0, 0, 0, 0, 0, 0, byte(len(s))}
		return append(b, s...)
	}
	var in []byte
	in = append(in, frame(1, "123\nout1")...)
	in = append(in, frame(2, "err")...)
	in = append(in, frame(1, "out2")...)
	var out, errb strings.Builder
	p := &process{pidKnown: make(chan struct{})}
	if err := demux(strings.NewReader(string(in)), &pidReader{p: p, out: &out}, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "out1out2" || errb.String() != "err" || p.pid != 123 {
		t.Errorf("stdout %q stderr %q pid %d", out.String(), errb.String(), p.pid)
	}
}

// TestTmpfsMounts checks that every tmpfs gets a size, the memory limit,
// unless its options give one.
func TestTmpfsMounts(t *testing.T) {
	tests := []struct {
		name string
		list []string
		want map[string]string
	}{
		{"defaults", []string{"/tmp", "/var/tmp/", "/run"}, map[string]string{
			"/tmp":     "rw,nosuid,nodev,exec,mode=1777,size=65536k",
			"/var/tmp": "rw,nosuid,nodev,exec,mode=1777,size=65536k",
			"/run":     "rw,nosuid,nodev,exec,mode=1777,size=65536k",
		}},
		{"options without a size", []string{"/tmp:rw,noexec"}, map[string]string{"/tmp": "rw,noexec,size=65536k"}},
		{"a size of the operator's", []string{"/tmp:rw,size=8m"}, map[string]string{"/tmp": "rw,size=8m"}},
		{"nr_blocks", []string{"/tmp:nr_blocks=100"}, map[string]string{"/tmp": "nr_blocks=100"}},
		{"a size-like option is not a size", []string{"/tmp:sizes=1"}, map[string]string{"/tmp": "sizes=1,size=65536k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tmpfsMounts(tt.list, 64<<20); !cmp.Equal(got, tt.want) {
				t.Errorf("%s", cmp.Diff(tt.want, got))
			}
		})
	}
}
