// Package labfarm starts a labgrid board farm made of real parts on 127.0.0.1, for tests and
// for make bench-farm: a labgrid coordinator, an exporter whose places each have a
// NetworkService pointing at a board (by default a real OpenSSH sshd of its own on this
// machine: a "board" that is this machine) and a NetworkPowerPort of model simplerest served
// by a small HTTP relay here. Nothing listens on any address but 127.0.0.1.
//
// A board is only an SSH address, a user and a key (Board), so that the same farm can export
// emulated ARM boards (QEMU with dropbear) instead: give Options.Boards, and a Relay.OnSet that
// starts and stops them.
//
// It is test support: the fsbench binary does not import it.
package labfarm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Board is a machine reached over SSH: the farm's NetworkService points at it.
type Board struct {
	Address string
	Port    int
	User    string
	// Key is the client's private key, and HostKey the board's public host key line
	// ("ssh-ed25519 AAAA..."), for known_hosts.
	Key, HostKey string
}

// FindLabgrid returns the directory holding labgrid-client, labgrid-coordinator and
// labgrid-exporter: that of $FSBENCH_LABGRID_CLIENT, of labgrid-client on PATH, or the venv
// scripts/setup-debian.sh makes (/opt/fsbench-labgrid/bin).
func FindLabgrid() (string, error) {
	var tried []string
	candidates := []string{os.Getenv("FSBENCH_LABGRID_CLIENT")}
	if p, err := exec.LookPath("labgrid-client"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/opt/fsbench-labgrid/bin/labgrid-client")
	for _, c := range candidates {
		if c == "" {
			continue
		}
		tried = append(tried, c)
		dir := filepath.Dir(c)
		ok := true
		for _, n := range []string{"labgrid-client", "labgrid-coordinator", "labgrid-exporter"} {
			if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Mode()&0o111 == 0 {
				ok = false
			}
		}
		if ok {
			return dir, nil
		}
	}
	return "", fmt.Errorf("labgrid is not installed (looked at %s): python3 -m venv /opt/fsbench-labgrid && /opt/fsbench-labgrid/bin/pip install labgrid==26.0.1",
		strings.Join(tried, ", "))
}

// FindSSHD returns OpenSSH's sshd (Debian: openssh-server).
func FindSSHD() (string, error) {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p, nil
	}
	return "", errors.New("OpenSSH's sshd is not installed: apt-get install openssh-server")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// proc is a server this package started; stop ends it by its pid.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func start(name, logPath, dir string, argv ...string) (*proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = lf, lf, dir
	// Its own process group: a Ctrl-C meant for fsbench in a test must not reach the farm.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); lf.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// waitPort waits until p accepts connections on 127.0.0.1:port.
func waitPort(p *proc, port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited: %s", p.name, p.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not listen on 127.0.0.1:%d after %s: %s", p.name, port, limit, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SSHD is a real OpenSSH server on 127.0.0.1 with its own host key, configuration and
// authorized client key: a board that is this machine.
type SSHD struct {
	Board Board
	p     *proc
}

// StartSSHD starts sshd in dir (its keys, configuration and log are written there) for user
// root, who logs in with a key made for it.
func StartSSHD(dir string) (*SSHD, error) { return startSSHD(dir, "") }

// startSSHD is StartSSHD; with hosts (a file), sshd runs in a mount namespace of its own where
// that file is /etc/hosts: names only it resolves (the names of boards behind an exporter).
func startSSHD(dir, hosts string) (*SSHD, error) {
	sshd, err := FindSSHD()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	clientKey := filepath.Join(dir, "client_ed25519")
	for _, k := range []string{hostKey, clientKey} {
		if _, err := os.Stat(k); err == nil {
			continue
		}
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fsbench-farm", "-f", k).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %w: %s", err, out)
		}
	}
	pub, err := os.ReadFile(clientKey + ".pub")
	if err != nil {
		return nil, err
	}
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, pub, 0o600); err != nil {
		return nil, err
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		return nil, err
	}
	// sshd refuses to start without its privilege separation directory, which Debian's
	// service unit makes at boot; the package alone does not.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "sshd_config")
	conf := fmt.Sprintf(`# fsbench test farm: a board that is this machine
ListenAddress 127.0.0.1:%d
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
AcceptEnv LANG LC_*
`, port, hostKey, filepath.Join(dir, "sshd.pid"), auth)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	// -D: in the foreground, so that its pid is the one we end; -e: its log to stderr.
	argv := []string{sshd, "-D", "-e", "-f", cfg}
	if hosts != "" {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			return nil, fmt.Errorf("unshare (util-linux) is needed for an exporter host's own /etc/hosts: %w", err)
		}
		// unshare and sh exec in place: the pid started is sshd's. The new namespace starts
		// with a copy of every mount of this machine, and this machine's / is private (no
		// systemd here to make it shared), so no unmount outside reaches the copies: a test
		// beside it that had a filesystem mounted at that moment (a loop device, a simulated
		// card's FUSE file) could unmount it but not format or detach its device again until
		// this sshd ended ("device busy": seen with an endurance campaign beside make
		// test-slow). So the copies of every block device's and FUSE mount but / are dropped
		// (lazily: one in use goes too); sshd needs none of them.
		argv = append([]string{unshare, "--mount", "--propagation", "private", "/bin/sh", "-c",
			dropCopiedMounts + ` && exec "$@"`, hosts}, argv...)
	}
	p, err := start("sshd", filepath.Join(dir, "sshd.log"), dir, argv...)
	if err != nil {
		return nil, err
	}
	if err := waitPort(p, port, 20*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	f := strings.Fields(string(hostPub))
	return &SSHD{p: p, Board: Board{Address: "127.0.0.1", Port: port, User: "root", Key: clientKey, HostKey: f[0] + " " + f[1]}}, nil
}

// dropCopiedMounts is the shell that makes an exporter host's namespace: $0 bound on
// /etc/hosts, then every copied mount of a block device (but / and that bind) or of a FUSE
// filesystem lazily unmounted. findmnt -r escapes a space in a path; such a mount stays.
const dropCopiedMounts = `mount --bind "$0" /etc/hosts && ` +
	`findmnt -rn -o TARGET,SOURCE,FSTYPE | while read -r m s f; do ` +
	`case "$m" in /|/etc/hosts) continue;; esac; ` +
	`case "$s $f" in /dev/*|*fuse*) umount -l "$m" 2>/dev/null;; esac; done; true`

// Stop ends sshd.
func (s *SSHD) Stop() { s.p.stop() }

// Relay is a network power switch of labgrid's simplerest model: GET /relay/INDEX/VALUE sets
// an outlet (1 on, 0 off), GET /relay/INDEX answers "1" or "0".
type Relay struct {
	// URL is the exporter's host template, http://127.0.0.1:PORT/relay/{index}/{value}.
	URL string
	// OnSet, when set, is called on each switching (an emulated board starts or stops); an
	// error answers 500.
	OnSet func(index int, on bool) error
	mu    sync.Mutex
	state map[int]bool
	// Switches counts the switchings per outlet.
	switches map[int]int
	srv      *http.Server
}

// StartRelay serves a relay on 127.0.0.1; every outlet starts on.
func StartRelay() (*Relay, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{state: map[int]bool{}, switches: map[int]int{}}
	r.URL = fmt.Sprintf("http://%s/relay/{index}/{value}", l.Addr())
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(l)
	return r, nil
}

// ServeHTTP answers the simplerest protocol.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(parts) < 2 || parts[0] != "relay" || len(parts) > 3 {
		http.NotFound(w, req)
		return
	}
	idx, err := strconv.Atoi(parts[1])
	if err != nil {
		http.Error(w, "bad index", http.StatusBadRequest)
		return
	}
	if len(parts) == 3 {
		on := parts[2] == "1"
		if parts[2] != "0" && !on {
			http.Error(w, "value is 0 or 1", http.StatusBadRequest)
			return
		}
		// Outside the lock: booting an emulated board takes tens of seconds, and the other
		// outlets' boards must not wait for it.
		if r.OnSet != nil {
			if err := r.OnSet(idx, on); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		r.mu.Lock()
		r.state[idx] = on
		r.switches[idx]++
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	on, known := r.state[idx]
	if on || !known {
		fmt.Fprint(w, "1")
	} else {
		fmt.Fprint(w, "0")
	}
}

// Switches is how many times outlet idx was switched.
func (r *Relay) Switches(idx int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.switches[idx]
}

// Stop ends the relay's server.
func (r *Relay) Stop() { r.srv.Close() }

// Options describe a farm.
type Options struct {
	// Dir holds the farm's files: keys, configurations, logs.
	Dir string
	// Places are the places to make, one board each.
	Places []string
	// Boards are the boards of the places, by place; a place without one gets an sshd of its
	// own on this machine.
	Boards map[string]Board
	// LabgridBin is the directory of labgrid's programs (default: FindLabgrid).
	LabgridBin string
	// Emulated, when set, gives each place without a board in Boards an emulated ARM board
	// whose power is the place's outlet on the relay.
	Emulated *Emulated
	// ProxyRequired puts the boards behind the exporter, the usual lab layout: the exporter
	// runs isolated (labgrid's --isolated: every resource has proxy_required, its proxy the
	// exporter's host), that host is an sshd of its own on 127.0.0.1, and each board is known
	// by a name only that host resolves (PLACE.fsbench-farm.invalid, in its own /etc/hosts):
	// a client reaches a board only through the exporter, as labgrid-client does, with ssh
	// -W or ProxyJump. Farm.Env gives labgrid-client the ssh configuration that reaches the
	// exporter host, as a user's ~/.ssh/config would.
	ProxyRequired bool
}

// Farm is a running farm.
type Farm struct {
	// Coordinator is the coordinator's 127.0.0.1:PORT; Client labgrid-client's path.
	Coordinator, Client string
	// SSHConfig is an ssh client configuration that reaches every board with its key and
	// checks its host key (fsbench --ssh-config).
	SSHConfig string
	Boards    map[string]Board
	Relay     *Relay
	// Index is each place's outlet on the relay.
	Index map[string]int
	// Emulated are the places' emulated boards (Options.Emulated), by place.
	Emulated map[string]*EmulatedBoard
	// Proxy is the exporter's host as labgrid publishes it (its fully qualified name) when
	// Options.ProxyRequired, and ProxySSHD the sshd that stands for that host.
	Proxy     string
	ProxySSHD *SSHD
	// Names are the boards' addresses as the exporter publishes them, by place: the boards'
	// own addresses, or with ProxyRequired names only the exporter host resolves.
	Names map[string]string
	// Env is what labgrid-client (and an fsbench that runs it) needs in its environment: with
	// ProxyRequired, a PATH whose ssh reads the farm's ssh configuration.
	Env   []string
	procs []*proc
	sshds []*SSHD
}

// Start starts a farm. Stop it with Stop, also after an error.
func Start(ctx context.Context, opt Options) (f *Farm, err error) {
	bin := opt.LabgridBin
	if bin == "" {
		if bin, err = FindLabgrid(); err != nil {
			return nil, err
		}
	}
	f = &Farm{Client: filepath.Join(bin, "labgrid-client"), Boards: map[string]Board{}, Index: map[string]int{},
		Emulated: map[string]*EmulatedBoard{}, Names: map[string]string{}}
	defer func() {
		if err != nil {
			f.Stop()
			f = nil
		}
	}()
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return f, err
	}
	if err := f.startBoards(ctx, opt); err != nil {
		return f, err
	}
	if err := f.startRelay(opt.Places); err != nil {
		return f, err
	}
	for _, place := range opt.Places {
		f.Names[place] = f.Boards[place].Address
		if opt.ProxyRequired {
			f.Names[place] = proxiedName(place)
		}
	}
	if opt.ProxyRequired {
		if err := f.startProxy(bin, opt); err != nil {
			return f, err
		}
	}
	if err := f.writeSSHConfig(opt); err != nil {
		return f, err
	}
	if err := f.startCoordinator(bin, opt.Dir); err != nil {
		return f, err
	}
	if err := f.startExporter(ctx, bin, opt); err != nil {
		return f, err
	}
	for _, place := range opt.Places {
		if _, err := f.Client1(ctx, "-p", place, "create"); err != nil {
			return f, err
		}
		if _, err := f.Client1(ctx, "-p", place, "add-match", "fsbench-farm/"+place+"/*"); err != nil {
			return f, err
		}
	}
	return f, nil
}

// startBoards gives every place its board: the one in opt.Boards, else an emulated ARM board
// (opt.Emulated), else an sshd of its own on this machine. What started is in f, so that Stop
// ends it also after an error.
func (f *Farm) startBoards(ctx context.Context, opt Options) error {
	if opt.Emulated != nil {
		var todo []string
		for _, place := range opt.Places {
			if _, ok := opt.Boards[place]; !ok {
				todo = append(todo, place)
			}
		}
		boards, views, err := startEmulated(ctx, opt.Emulated, opt.Dir, todo)
		f.Emulated = boards // Stop ends those that booted, also after an error
		if err != nil {
			return err
		}
		for place, b := range views {
			f.Boards[place] = b
		}
	}
	for _, place := range opt.Places {
		b, ok := opt.Boards[place]
		if e, ok2 := f.Boards[place]; ok2 {
			b, ok = e, true
		}
		if !ok {
			s, err := StartSSHD(filepath.Join(opt.Dir, "board-"+place))
			if err != nil {
				return fmt.Errorf("board of place %s: %w", place, err)
			}
			f.sshds = append(f.sshds, s)
			b = s.Board
		}
		f.Boards[place] = b
	}
	return nil
}

// startRelay starts the power relay; outlet i switches the emulated board of places[i].
func (f *Farm) startRelay(places []string) (err error) {
	if f.Relay, err = StartRelay(); err != nil {
		return err
	}
	f.Relay.OnSet = func(index int, on bool) error {
		if index < 0 || index >= len(places) {
			return nil
		}
		e := f.Emulated[places[index]]
		if e == nil {
			return nil // an sshd board has no power to switch: it is this machine
		}
		if on {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			return e.PowerOn(ctx)
		}
		return e.PowerOff()
	}
	return nil
}

// writeSSHConfig writes the client configuration (f.SSHConfig) and its known_hosts: each
// board by its name and port, with its own host key checked, and the exporter's host when the
// boards are behind it. It also numbers the places' outlets (f.Index).
func (f *Farm) writeSSHConfig(opt Options) error {
	var known, conf strings.Builder
	conf.WriteString("# fsbench test farm\n")
	for i, place := range opt.Places {
		b := f.Boards[place]
		f.Index[place] = i
		host := f.Names[place]
		if b.Port != 0 && b.Port != 22 {
			host = fmt.Sprintf("[%s]:%d", f.Names[place], b.Port)
		}
		if b.HostKey != "" {
			fmt.Fprintf(&known, "%s %s\n", host, b.HostKey)
		}
	}
	knownPath := filepath.Join(opt.Dir, "known_hosts")
	if f.ProxySSHD != nil {
		pb := f.ProxySSHD.Board
		fmt.Fprintf(&known, "[%s]:%d %s\n", pb.Address, pb.Port, pb.HostKey)
		sshHost(&conf, f.Proxy, fmt.Sprintf("  HostName %s\n  Port %d\n  User %s\n", pb.Address, pb.Port, pb.User), pb.Key, knownPath)
	}
	if err := os.WriteFile(knownPath, []byte(known.String()), 0o600); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, place := range opt.Places {
		b := f.Boards[place]
		name := f.Names[place]
		if seen[name+b.Key] {
			continue
		}
		seen[name+b.Key] = true
		if b.HostKey == "" {
			// A board whose host key changes at each boot (an emulated one): nothing to pin.
			sshHost(&conf, name, "", b.Key, "")
			continue
		}
		sshHost(&conf, name, "", b.Key, knownPath)
	}
	f.SSHConfig = filepath.Join(opt.Dir, "ssh_config")
	return os.WriteFile(f.SSHConfig, []byte(conf.String()), 0o600)
}

// sshHost writes one Host entry of an ssh client configuration: head holds the lines that
// come before the key (HostName, Port, User); knownHosts "" checks no host key.
func sshHost(w *strings.Builder, host, head, key, knownHosts string) {
	check := "UserKnownHostsFile " + knownHosts + "\n  StrictHostKeyChecking yes"
	if knownHosts == "" {
		check = "UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no"
	}
	fmt.Fprintf(w, "Host %s\n%s  IdentityFile %s\n  IdentitiesOnly yes\n  %s\n  BatchMode yes\n  LogLevel ERROR\n  ConnectTimeout 30\n",
		host, head, key, check)
}

// startCoordinator starts labgrid's coordinator on a free port (f.Coordinator) and waits for
// it to listen. It keeps its places in places.yaml and resources.yaml in its working
// directory: its own, so that runs do not see each other's places.
func (f *Farm) startCoordinator(bin, dir string) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	f.Coordinator = fmt.Sprintf("127.0.0.1:%d", port)
	coordDir := filepath.Join(dir, "coordinator")
	if err := os.MkdirAll(coordDir, 0o755); err != nil {
		return err
	}
	coord, err := start("labgrid-coordinator", filepath.Join(dir, "coordinator.log"), coordDir, filepath.Join(bin, "labgrid-coordinator"), "-l", f.Coordinator)
	if err != nil {
		return err
	}
	f.procs = append(f.procs, coord)
	return waitPort(coord, port, 60*time.Second)
}

// startExporter exports each place's board (a NetworkService) and its outlet on the relay (a
// NetworkPowerPort), and waits until the coordinator has them all.
func (f *Farm) startExporter(ctx context.Context, bin string, opt Options) error {
	var exp strings.Builder
	for _, place := range opt.Places {
		b := f.Boards[place]
		fmt.Fprintf(&exp, "%s:\n  NetworkService:\n    address: %s\n    port: %d\n    username: %s\n", place, f.Names[place], b.Port, b.User)
		fmt.Fprintf(&exp, "  NetworkPowerPort:\n    model: simplerest\n    host: '%s'\n    index: %d\n", f.Relay.URL, f.Index[place])
	}
	expPath := filepath.Join(opt.Dir, "exporter.yaml")
	if err := os.WriteFile(expPath, []byte(exp.String()), 0o644); err != nil {
		return err
	}
	exArgs := []string{filepath.Join(bin, "labgrid-exporter"), "-c", f.Coordinator, "-n", "fsbench-farm", "--hostname", "127.0.0.1"}
	if opt.ProxyRequired {
		exArgs = append(exArgs, "--isolated")
	}
	ex, err := start("labgrid-exporter", filepath.Join(opt.Dir, "exporter.log"), opt.Dir, append(exArgs, expPath)...)
	if err != nil {
		return err
	}
	f.procs = append(f.procs, ex)
	return f.waitResources(ctx, ex, len(opt.Places)*2)
}

// proxiedName is the name of place's board behind the exporter: .invalid (RFC 2606) so that
// no resolver but the exporter host's own /etc/hosts ever answers for it.
func proxiedName(place string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(place) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String() + ".fsbench-farm.invalid"
}

// startProxy starts the exporter host of an isolated exporter: an sshd that alone resolves the
// boards' names, and an ssh on Env's PATH that reaches it under the name labgrid publishes
// for it (the exporter's fully qualified host name, Python's socket.getfqdn()).
func (f *Farm) startProxy(bin string, opt Options) error {
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		return fmt.Errorf("the exporter host's /etc/hosts: %w", err)
	}
	var extra strings.Builder
	for _, place := range opt.Places {
		fmt.Fprintf(&extra, "%s %s\n", f.Boards[place].Address, f.Names[place])
	}
	hostsPath := filepath.Join(opt.Dir, "exporter-hosts")
	if err := os.WriteFile(hostsPath, append(append(hosts, '\n'), extra.String()...), 0o644); err != nil {
		return err
	}
	s, err := startSSHD(filepath.Join(opt.Dir, "exporter-host"), hostsPath)
	if err != nil {
		return fmt.Errorf("the exporter host's sshd: %w", err)
	}
	f.sshds = append(f.sshds, s)
	f.ProxySSHD = s
	py := filepath.Join(bin, "python3")
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	out, err := exec.Command(py, "-c", "import socket; print(socket.getfqdn())").Output()
	if err != nil {
		return fmt.Errorf("the exporter's host name (%s -c socket.getfqdn()): %w", py, err)
	}
	f.Proxy = strings.TrimSpace(string(out))
	realSSH, err := exec.LookPath("ssh")
	if err != nil {
		return fmt.Errorf("ssh (openssh-client): %w", err)
	}
	binDir := filepath.Join(opt.Dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	// labgrid-client runs ssh from PATH with the user's configuration: this one is the farm's.
	wrapper := fmt.Sprintf("#!/bin/sh\n# fsbench test farm: ssh with the farm's configuration, as ~/.ssh/config would be\nexec %s -F %s \"$@\"\n",
		realSSH, filepath.Join(opt.Dir, "ssh_config"))
	if err := os.WriteFile(filepath.Join(binDir, "ssh"), []byte(wrapper), 0o755); err != nil {
		return err
	}
	f.Env = []string{"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH")}
	return nil
}

// waitResources waits until the coordinator lists n resources of the exporter.
func (f *Farm) waitResources(ctx context.Context, ex *proc, n int) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := f.Client1(ctx, "resources")
		got := 0
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "fsbench-farm/") {
				got++
			}
		}
		if got >= n {
			return nil
		}
		if ex.exited() {
			return fmt.Errorf("labgrid-exporter exited: %s", ex.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the exporter's %d resources did not show up at the coordinator (%d did): %s", n, got, ex.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Client1 runs labgrid-client -x COORDINATOR args and returns its output.
func (f *Farm) Client1(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, f.Client, append([]string{"-x", f.Coordinator}, args...)...)
	cmd.Env = append(os.Environ(), f.Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("labgrid-client %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Acquired returns who holds place ("" when it is free), from labgrid-client show.
func (f *Farm) Acquired(ctx context.Context, place string) (string, error) {
	out, err := f.Client1(ctx, "-p", place, "show")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "  acquired: "); ok {
			if v == "None" {
				return "", nil
			}
			return v, nil
		}
	}
	return "", fmt.Errorf("labgrid-client show %s: no acquired line: %s", place, out)
}

// Stop ends the exporter, the coordinator, the boards' sshds, the relay and the emulated
// boards (exactly their QEMU processes), newest first.
func (f *Farm) Stop() {
	for i := len(f.procs) - 1; i >= 0; i-- {
		f.procs[i].stop()
	}
	for _, s := range f.sshds {
		s.Stop()
	}
	if f.Relay != nil {
		f.Relay.Stop()
	}
	for _, e := range f.Emulated {
		e.PowerOff()
		e.stopCard()
	}
}
