// Package contract holds every rule the runtime shares with the NixOS
// module and the docs, in contract.json: name patterns, limits and
// defaults, cookie and header names, socket paths and modes, environment
// variables, routes and exit codes. The Go side embeds the file, the Nix
// lib includes the same bytes (modules/src/lib/default.nix, through
// builtins.fromJSON), and the docs' tables are generated from it
// (internal/contractdocs), so a rule is written once.
//
// Patterns are in the subset RE2 and Nix's builtins.match read alike; Nix
// matches the whole string, so Go anchors them (Name.Match). A string
// holding "<user>" (Placeholder) is a template: For fills it in.
package contract

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed contract.json
var raw []byte

// JSON is the contract's bytes, as the Nix lib includes them.
func JSON() []byte { return bytes.Clone(raw) }

// Placeholder stands for an agent user's name in paths, units and routes.
const Placeholder = "<user>"

// For fills an agent user's name into a template.
func For(template, user string) string { return strings.ReplaceAll(template, Placeholder, user) }

// AuthPage is the path of the auth service's page name on every origin
// (under the authPages route, without Caddy's "*").
func AuthPage(name string) string { return strings.TrimSuffix(c.Routes.AuthPages.Path, "*") + name }

// AppLabel is the label of user's app (Apps.Label filled): its unit's
// instance and its origin's first host name label.
func AppLabel(user, app string) string {
	return strings.NewReplacer("<app>", app, "<user>", user).Replace(c.Apps.Label)
}

// SplitAppLabel is AppLabel's inverse: app names hold no '-', so the
// first separator (what Apps.Label holds between <app> and <user>)
// splits a label; ok is false without one.
func SplitAppLabel(label string) (user, app string, ok bool) {
	sep := strings.TrimSuffix(strings.TrimPrefix(c.Apps.Label, "<app>"), "<user>")
	app, user, ok = strings.Cut(label, sep)
	return user, app, ok && AppLabel(user, app) == label
}

// TerminalLink is the local path, on a user origin, of session's terminal
// (the terminal route, its session as ttyd's argument).
func TerminalLink(session string) string {
	return c.Routes.Terminal.Path + "/?arg=" + url.QueryEscape(session)
}

// Name is a name pattern and what it names (for messages and the docs).
type Name struct {
	Pattern string `json:"pattern"`
	What    string `json:"what"`

	re *regexp.Regexp // set by Parse; else compiled at first use
}

// Match reports whether s matches the whole pattern, as builtins.match
// does in Nix. The program's contract compiles a pattern at its first use
// (every command starts a process, and most use two or three patterns);
// Parse compiles them all, and the contract's tests parse the file.
func (n *Name) Match(s string) bool {
	re := n.re
	if re == nil {
		v, ok := lazy.Load(n.Pattern)
		if !ok {
			v, _ = lazy.LoadOrStore(n.Pattern, regexp.MustCompile(anchored(n.Pattern)))
		}
		re = v.(*regexp.Regexp)
	}
	return re.MatchString(s)
}

// lazy holds the embedded contract's patterns once compiled.
var lazy sync.Map // pattern -> *regexp.Regexp

func anchored(pattern string) string { return "^(?:" + pattern + ")$" }

// Lifetime is a Go duration setting with its default and least value.
type Lifetime struct {
	Default string `json:"default"`
	Min     string `json:"min"`
}

// Interval is a Go duration setting with its default and bounds (all Go
// durations, as Nix's options take them).
type Interval struct {
	Default string `json:"default"`
	Min     string `json:"min"`
	Max     string `json:"max"`
}

// IntRange is an integer setting with its default and bounds.
type IntRange struct {
	Default int64 `json:"default"`
	Min     int64 `json:"min"`
	Max     int64 `json:"max"`
}

// CookieNames are the box's own cookies: the only ones Caddy passes on.
type CookieNames struct {
	// Session is the session cookie of every origin (__Host-: no Domain).
	Session string `json:"session"`
	// HandoverPath is where an origin takes a hand-over code.
	HandoverPath string `json:"handoverPath"`
	// Bind binds a hand-over code to the browser that completes it on the
	// origin it opens (a user's or an app's): that origin sets it itself
	// (__Host-: no Domain, so no other origin, a sibling app on the same
	// site included, can set it) and the box origin keeps only its
	// sha256 with the code.
	Bind string `json:"bind"`
}

// Socket is a unix socket of the box: where it is, which unit creates it,
// its mode (or, for a socket its program creates, its directory's), and
// whether Caddy's group may connect (the module's socket drop-in).
type Socket struct {
	Path string `json:"path"`
	Unit string `json:"unit"`
	// FDName is the unit's FileDescriptorName=, by which the program
	// tells its listeners apart (LISTEN_FDNAMES); null for a socket its
	// program creates itself.
	FDName *string `json:"fdName"`
	// Datagram: ListenDatagram= (else ListenStream=).
	Datagram bool    `json:"datagram,omitempty"`
	Mode     *string `json:"mode"`
	// Group is the socket's group when it is neither root nor Caddy's.
	Group   *string `json:"group"`
	DirMode *string `json:"dirMode"`
	Caddy   bool    `json:"caddy"`
	Clients string  `json:"clients"`
}

// For is the socket's path for an agent user.
func (s Socket) For(user string) string { return For(s.Path, user) }

// Var is an environment variable: its name, who reads it, and what it holds.
// Term is a fixed name and what it means.
type Term struct {
	Name string `json:"name"`
	What string `json:"what"`
}

// AgentEvents is what one setup's hooks report. DetailFields names, per
// event with details, the field of its input that holds them.
type AgentEvents struct {
	DetailFields map[string]string     `json:"detailFields"`
	Events       map[string]StateEvent `json:"events"`
}

// StateEvent is the state (and the reason) an agent's event means.
type StateEvent struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

type Var struct {
	Name   string `json:"name"`
	Reader string `json:"reader"`
	What   string `json:"what"`
}

// Route is a path (or a Caddy path matcher) and what is served there.
type Route struct {
	Path string `json:"path"`
	What string `json:"what"`
}

// ExitCode is one exit code of agent-box: its number, the help text's
// short form and the docs' meaning.
type ExitCode struct {
	Code    int    `json:"code"`
	Short   string `json:"short"`
	Meaning string `json:"meaning"`
}

// Contract is contract.json; its fields are also the package's variables.
type Contract struct {
	Names struct {
		User         Name `json:"user"`
		WebUser      Name `json:"webUser"`
		Login        Name `json:"login"`
		Session      Name `json:"session"`
		Hook         Name `json:"hook"`
		App          Name `json:"app"`
		WebSessionID Name `json:"webSessionId"`
	} `json:"names"`
	Formats struct {
		// Duration is what a duration setting may hold: Go durations in
		// the units Nix's check reads too.
		Duration struct {
			Name
			// Max is the longest duration (Go's own limit, rounded down).
			Max string `json:"max"`
		} `json:"duration"`
		Domain struct {
			Name
			MaxHostLength int `json:"maxHostLength"`
			MaxPort       int `json:"maxPort"`
			// DefaultPort is left out of the domain (browsers omit it).
			DefaultPort int `json:"defaultPort"`
		} `json:"domain"`
	} `json:"formats"`
	Web struct {
		SessionLifetime Lifetime `json:"sessionLifetime"`
		IdleTimeout     Lifetime `json:"idleTimeout"`
		// TerminalCheckInterval: how often a web daemon asks the auth
		// service whether the login sessions of its open terminals still
		// live (services.agent-box.web.terminalCheckInterval).
		TerminalCheckInterval Interval `json:"terminalCheckInterval"`
		// SessionEvents: the live session list of a user origin, an
		// event stream at Path (docs/web-contract.md, "The web daemon"):
		// the list at once and after every change of the user's
		// registry, observations or supervisor state (inotify; a burst
		// of changes is sent once, Settle after its first), a comment
		// line every KeepAlive; at most MaxStreams per web daemon, one
		// more ends the oldest.
		SessionEvents struct {
			Path       string `json:"path"`
			KeepAlive  string `json:"keepAlive"`
			Settle     string `json:"settle"`
			MaxStreams int    `json:"maxStreams"`
		} `json:"sessionEvents"`
		// AgentsClient: what tells the agents apart from the box's own
		// processes on loopback. Units.Clients loads the nftables table
		// Table, which gives every connection of an agent user to the
		// web port on an address of the box Address as its source
		// (IPv4; IPv6 ones are reset), so an agent cannot pass for the
		// operator's SSH tunnel; the auth service counts Address as one
		// client and every other loopback address as another.
		AgentsClient struct {
			Address string `json:"address"`
			Table   string `json:"table"`
		} `json:"agentsClient"`
	} `json:"web"`
	Webhooks struct {
		NotifyMaxBytes int      `json:"notifyMaxBytes"`
		MaxBodySize    IntRange `json:"maxBodySize"`
		// QuotaSlack: a hook's quota is at least 2*maxBodySize+QuotaSlack.
		QuotaSlack   int64    `json:"quotaSlack"`
		RetentionMin string   `json:"retentionMin"`
		Concurrency  IntRange `json:"concurrency"`
	} `json:"webhooks"`
	// WebAssets: the browser libraries of the workspace page, npm
	// packages at pinned versions checked against the registry's
	// integrity values: the module fetches each tarball (fetchurl) and
	// puts Files (tarball member -> served name) under Dir of the user's
	// environment; the web daemon serves exactly those names at Route.
	WebAssets struct {
		Route    string         `json:"route"`
		Dir      string         `json:"dir"`
		Packages []WebAssetPack `json:"packages"`
	} `json:"webAssets"`
	// Apps: what an agent builds, run as a hardened service of its user
	// (docs/runtime-contract.md, "Apps"). Label names an app of a user
	// in its unit's instance (one host name label, for an origin of its
	// own): app names hold no '-', so the first "--" splits it. The app's
	// program lives in Dir, the user's in a directory of root's, so that
	// the user cannot swap it for a symlink (the unit sees it read-only);
	// it keeps its data in
	// /var/lib/<StateDirectory> ($STATE_DIRECTORY); it serves HTTP on
	// 127.0.0.1:<Port> of the unit's own network namespace ($<PortVariable>),
	// reached only through Socket, which systemd creates for Caddy. The
	// launcher (package apprun) starts the program Settle after its file
	// appears and restarts it after RestartDelay, doubling up to
	// RestartDelayMax while it keeps exiting quickly.
	Apps struct {
		Label          string `json:"label"`
		Unit           string `json:"unit"`
		Dir            string `json:"dir"`
		StateDirectory string `json:"stateDirectory"`
		Socket         struct {
			Path   string `json:"path"`
			Unit   string `json:"unit"`
			FDName string `json:"fdName"`
			Mode   string `json:"mode"`
		} `json:"socket"`
		Port            int      `json:"port"`
		PortVariable    string   `json:"portVariable"`
		Settle          string   `json:"settle"`
		RestartDelay    Lifetime `json:"restartDelay"`
		RestartDelayMax Lifetime `json:"restartDelayMax"`
		MemoryMax       string   `json:"memoryMax"`
		TasksMax        int      `json:"tasksMax"`
		// Manage: what a user may do to its own apps' units without root
		// (`agent-box app`): the systemd verbs, and Reset (a failed unit
		// is reset before a start), that polkit allows it for exactly
		// those units (the module's rules file, under /etc), and nothing
		// else.
		Manage struct {
			Verbs        []string `json:"verbs"`
			Reset        string   `json:"reset"`
			PolkitAction string   `json:"polkitAction"`
			PolkitRules  string   `json:"polkitRules"`
		} `json:"manage"`
	} `json:"apps"`
	// Uploads: files a person uploads on a user origin land in ~/Dir
	// (docs/web-contract.md, "Uploads"): at most MaxBytes each, while
	// the regular files directly in ~/Dir hold at most QuotaBytes; a name
	// of at most NameMaxBytes. An upload is written to a file named
	// TempPrefix... in ~/Dir first (hidden, not counted twice) and
	// linked to its name only when whole.
	Uploads struct {
		Dir          string `json:"dir"`
		MaxBytes     int64  `json:"maxBytes"`
		QuotaBytes   int64  `json:"quotaBytes"`
		NameMaxBytes int    `json:"nameMaxBytes"`
		TempPrefix   string `json:"tempPrefix"`
	} `json:"uploads"`
	// Conversations: the limits of the kickoff prompt, of an agent's
	// report (a hook's input) and of ~/.claude.json as agent-box reads it.
	// Sessions are the limits of a user's sessions, which the module's
	// assertions and the registry both enforce: everything of a session
	// that reaches the agent's execve fits Linux's limits.
	Sessions struct {
		// Max: the most sessions a registry (and a seed) holds.
		Max int `json:"max"`
		// ArgMaxBytes: one argument, MAX_ARG_STRLEN (32 pages) less its NUL.
		ArgMaxBytes int `json:"argMaxBytes"`
		// ArgsMaxBytes: a session's arguments together, each counted as
		// execve counts it: its bytes, its NUL and ArgPointerBytes.
		ArgsMaxBytes    int `json:"argsMaxBytes"`
		ArgPointerBytes int `json:"argPointerBytes"`
		// CwdMaxBytes: the working directory, PATH_MAX less its NUL.
		CwdMaxBytes int `json:"cwdMaxBytes"`
		// SeedMaxBytes: the seed file (AGENT_BOX_SEED, session add --file).
		SeedMaxBytes int `json:"seedMaxBytes"`
		// MaxTombstones: the most removed names a registry keeps (the
		// supervisor prunes those that keep nothing away; a remove beyond
		// refuses, saying so).
		MaxTombstones int `json:"maxTombstones"`
	} `json:"sessions"`
	Conversations struct {
		PromptMaxBytes      int `json:"promptMaxBytes"`
		ReportMaxBytes      int `json:"reportMaxBytes"`
		ClaudeStateMaxBytes int `json:"claudeStateMaxBytes"`
		// The placeholders of an agent's resumeArgs/newArgs ({id}) and
		// promptArgs ({prompt}).
		IDPlaceholder     string `json:"idPlaceholder"`
		PromptPlaceholder string `json:"promptPlaceholder"`
		// ClaudeMinVersion: the oldest Claude Code the "claude" setup
		// accepts (the module's assertion).
		ClaudeMinVersion string `json:"claudeMinVersion"`
		// Setups: what exec-session can prepare before a spawn (an
		// agent's setup), besides nothing.
		Setups []string `json:"setups"`
	} `json:"conversations"`
	// Attention: a session's attention states (docs/runtime-contract.md,
	// "Attention"), why a state was entered, and what each agent's hooks
	// mean.
	Attention struct {
		States struct {
			Working      Term `json:"working"`
			NeedsYou     Term `json:"needsYou"`
			Finished     Term `json:"finished"`
			Exited       Term `json:"exited"`
			CrashLooping Term `json:"crashLooping"`
			Limited      Term `json:"limited"`
		} `json:"states"`
		Reasons []Term `json:"reasons"`
		// Report: how a supervisor tells the auth service every state
		// of its user's sessions (PUT Path on the status socket, lines
		// of package attention's report format).
		Report struct {
			Path        string `json:"path"`
			MaxBytes    int    `json:"maxBytes"`
			MaxSessions int    `json:"maxSessions"`
			// MaxTry bounds a limited session's try in a report line.
			MaxTry int `json:"maxTry"`
			// Burst and PerSecond: the auth service's token bucket per
			// user; a report beyond it gets 429.
			Burst     int `json:"burst"`
			PerSecond int `json:"perSecond"`
			// ResendEvery: a supervisor sends its report this often even
			// without a change (an auth service that restarted knows the
			// states again within it).
			ResendEvery string `json:"resendEvery"`
		} `json:"report"`
		// Inbox: the box origin's live list, for a login, of the
		// sessions in States (in that order) across the agent users the
		// login may open: an event stream at the auth page Page.
		Inbox struct {
			Page   string   `json:"page"`
			States []string `json:"states"`
			// KeepAlive: the stream's comment line, this often; the
			// stream's session is checked then too (a revoke ends the
			// stream at once).
			KeepAlive string `json:"keepAlive"`
			// StaleAfter: a user whose last report is older is not
			// listed (its supervisor stopped).
			StaleAfter string `json:"staleAfter"`
			// MaxStreams: open streams per login; one more ends the
			// oldest.
			MaxStreams int `json:"maxStreams"`
		} `json:"inbox"`
		// Notify: notifications out (docs/web-contract.md,
		// "Notifications"): the auth service sends each new inbox entry
		// of a login with a notify URL as one datagram (at most
		// MaxEventBytes) to the notify feed socket (its group is the
		// auth service's supplementary group);
		// the notify service POSTs it to the login's URL (at most
		// URLMaxBytes, the credential NotifyPrefix + login), Queue events
		// per login and agent user waiting (the users take turns), each tried Attempts times, each attempt at
		// most Timeout, waiting BackoffFirst, then twice as long each
		// time up to BackoffMax.
		Notify struct {
			MaxEventBytes int    `json:"maxEventBytes"`
			URLMaxBytes   int    `json:"urlMaxBytes"`
			Queue         int    `json:"queue"`
			Attempts      int    `json:"attempts"`
			Timeout       string `json:"timeout"`
			BackoffFirst  string `json:"backoffFirst"`
			BackoffMax    string `json:"backoffMax"`
		} `json:"notify"`
		// EventMaxBytes bounds what agent-box reads of a hook's input.
		EventMaxBytes int `json:"eventMaxBytes"`
		// WatchSession is the tmux session of the supervisor's watcher
		// (never a registry name: '+' is not in the session pattern).
		WatchSession string `json:"watchSession"`
		// SilenceAfter bounds services.agent-box.attention.silenceAfter
		// (null by default: silence is not watched).
		SilenceAfter struct {
			Min string `json:"min"`
			Max string `json:"max"`
		} `json:"silenceAfter"`
		// AgentEvents: per setup, the agent's events agent-box installs
		// hooks for and the state each means. A key "E:D" is event E
		// whose input has D in its DetailFields[E]; a key "E" alone is
		// every other input of E.
		AgentEvents map[string]AgentEvents `json:"agentEvents"`
	} `json:"attention"`
	Cookies CookieNames `json:"cookies"`
	Headers struct {
		// Prefix starts every header of the box's own; the web daemon
		// removes every header with it before ttyd.
		Prefix  string `json:"prefix"`
		User    string `json:"user"`
		Session string `json:"session"`
		Client  string `json:"client"`
	} `json:"headers"`
	Credentials struct {
		// LoginPrefix + L is login L's systemd credential (its hash);
		// HookPrefix + N is hook N's (its secret).
		LoginPrefix string `json:"loginPrefix"`
		HookPrefix  string `json:"hookPrefix"`
		// NotifyPrefix + L is login L's notify URL (the notify service's).
		NotifyPrefix string `json:"notifyPrefix"`
	} `json:"credentials"`
	Logs struct {
		// FailedLogin starts the auth service's failed-login line, which
		// fail2ban's filter reads: "<FailedLogin> login=<L> addr=<A>".
		FailedLogin string `json:"failedLogin"`
	} `json:"logs"`
	// Programs are the programs the runtime's Go source builds besides
	// agent-box (each cmd/<name>, in the module's subPackages).
	Programs struct {
		Spawn Term `json:"spawn"`
	} `json:"programs"`
	Units struct {
		// Supervisor is an agent user's supervisor unit.
		Supervisor string `json:"supervisor"`
		// Sessions is the unit of an agent user's tmux server and so of
		// every agent (the supervisor only drives it).
		Sessions string `json:"sessions"`
		// Disk sets an agent user's disk quota (the user's diskQuota
		// option) and clears it when it stops.
		Disk string `json:"disk"`
		// UserSlice holds every unit of an agent user; <user> is the
		// systemd-escaped user name ('-' is \x2d), so that a user's
		// slice is never a child of another's. Stopping it stops the user.
		UserSlice string `json:"userSlice"`
		Auth      string `json:"auth"`
		Web       string `json:"web"`
		Term      string `json:"term"`
		Notify    string `json:"notify"`
		// Clients loads web.agentsClient's table (a oneshot unit).
		Clients string `json:"clients"`
	} `json:"units"`
	Dirs struct {
		// Runtime is an agent user's runtime directory (the unit's
		// RuntimeDirectory=): its tmux socket, token and state.
		Runtime string `json:"runtime"`
	} `json:"dirs"`
	// UserTasks: of a user's tasksMax (its slice's TasksMax), Reserve tasks
	// are kept from the sessions unit (tmux and the agents: TasksMax is
	// tasksMax less Reserve) for the user's other agent-box units (the
	// supervisor, the web daemon, the terminal), so that while the agents
	// are at their cap the supervisor still runs tmux (a session rm of the
	// runaway applies) and the terminal's tmux client has room to start.
	UserTasks struct {
		Reserve int `json:"reserve"`
	} `json:"userTasks"`
	// RuntimeTmpfs bounds the tmpfs of its own that each runtime directory
	// is (a mount unit per user), so no agent fills /run, where systemd
	// needs room to reload: Size (tmpfs size=) and Inodes (nr_inodes=).
	RuntimeTmpfs struct {
		Size   string `json:"size"`
		Inodes int    `json:"inodes"`
	} `json:"runtimeTmpfs"`
	// UsageLimits: a session whose agent reached its account's usage
	// limit (attention state limited) is resumed in its conversation with
	// ResumePrompt at the reset the agent named (when within MaxReset),
	// else after FirstWait, Growth times longer each try up to MaxWait;
	// every try plus up to Jitter, and at most PerMinute resumes a minute
	// per supervisor (package usagelimit).
	UsageLimits struct {
		ResumePrompt string `json:"resumePrompt"`
		FirstWait    string `json:"firstWait"`
		Growth       int    `json:"growth"`
		MaxWait      string `json:"maxWait"`
		Jitter       string `json:"jitter"`
		MaxReset     string `json:"maxReset"`
		PerMinute    int    `json:"perMinute"`
		// AgentRetry: an agent's own retry that waits at least this long
		// (OpenCode's session.status retry, which honours the API's
		// retry-after) is the usage limit; a shorter one is a transient
		// error it retries itself, not reported.
		AgentRetry string `json:"agentRetry"`
		// TurnRead: how the supervisor reads the end of a turn that no
		// hook tells (Codex's failed turn, from its rollout file): Every
		// while the file grows, its last TailBytes, while the newest turn
		// is open and for Grace after the event that began the reads.
		TurnRead struct {
			Every     string `json:"every"`
			Grace     string `json:"grace"`
			TailBytes int    `json:"tailBytes"`
		} `json:"turnRead"`
	} `json:"usageLimits"`
	// Approvals: a waiting agent's permission request, answered from the
	// box origin (docs/web-contract.md, "Approvals"). The hook of an
	// agent's AgentEvents[setup] event POSTs the request to Path on the
	// auth service's status socket and waits there (retrying every
	// RetryEvery while the service restarts) until a person decides, Wait
	// passes (then the agent's own prompt takes over) or the hook goes;
	// Claude's hook timeout is HookTimeoutSeconds, beyond Wait.Max. A
	// user has at most MaxPending requests; a request's tool name and
	// shown input are at most MaxToolBytes and MaxInputBytes (its body
	// MaxBodyBytes). The box origin decides with a POST of
	// authPage(DecidePage); a notification's action URL ActPrefix<token>
	// decides once, within ActionLifetime. A request whose hook is gone
	// is dropped; after a restart of the service the hooks have
	// ReattachGrace to come back.
	Approvals struct {
		Path        string            `json:"path"`
		DecidePage  string            `json:"decidePage"`
		ActPrefix   string            `json:"actPrefix"`
		AgentEvents map[string]string `json:"agentEvents"`
		MaxPending  int               `json:"maxPending"`
		// ToolPattern: a tool's name (an identifier; any other character
		// becomes '_'); MaxRulesBytes bounds the rules "allow for this
		// session" would set (longer ones are not offered);
		// NotifyTextBytes a notification's text (a longer one offers
		// Deny only); MaxConnections the connections waiting on one
		// request; MaxRelays the requests a supervisor relays at once;
		// BlankRun the run of blanks the page says in words.
		ToolPattern        string   `json:"toolPattern"`
		MaxToolBytes       int      `json:"maxToolBytes"`
		MaxInputBytes      int      `json:"maxInputBytes"`
		MaxRulesBytes      int      `json:"maxRulesBytes"`
		NotifyTextBytes    int      `json:"notifyTextBytes"`
		MaxConnections     int      `json:"maxConnections"`
		MaxRelays          int      `json:"maxRelays"`
		BlankRun           int      `json:"blankRun"`
		MaxBodyBytes       int      `json:"maxBodyBytes"`
		Wait               Interval `json:"wait"`
		HookTimeoutSeconds int      `json:"hookTimeoutSeconds"`
		ActionLifetime     Interval `json:"actionLifetime"`
		ReattachGrace      string   `json:"reattachGrace"`
		RetryEvery         string   `json:"retryEvery"`
		// Reply: a person's reply to a session in one of States, from the
		// box origin (POST authPage(Page)): one line of clean text of at
		// most conversations.promptMaxBytes, at most MaxPending per user
		// waiting, each at most MaxAge (a stale answer is typed nowhere);
		// the user's supervisor takes them with a GET of Path on
		// the status listener (answered when one waits, or empty after
		// Poll) and types each into its session, Enter EnterAfter later.
		Reply struct {
			Page       string   `json:"page"`
			Path       string   `json:"path"`
			States     []string `json:"states"`
			MaxPending int      `json:"maxPending"`
			MaxAge     string   `json:"maxAge"`
			Poll       string   `json:"poll"`
			EnterAfter string   `json:"enterAfter"`
		} `json:"reply"`
	} `json:"approvals"`
	// DiskQuota is a user's diskQuota option: a size (Pattern: a number
	// and M, G or T, powers of 1024) that bounds the bytes the user owns
	// on each filesystem where it writes (its home's, its apps' state's,
	// its units' private temporary directories'), and, at one file per
	// BytesPerFile of it (ext4's default inode ratio), the files.
	DiskQuota struct {
		Pattern      string `json:"pattern"`
		BytesPerFile int    `json:"bytesPerFile"`
	} `json:"diskQuota"`
	Sockets struct {
		AuthVerify  Socket `json:"authVerify"`
		AuthPages   Socket `json:"authPages"`
		AuthStatus  Socket `json:"authStatus"`
		AuthControl Socket `json:"authControl"`
		NotifyFeed  Socket `json:"notifyFeed"`
		Web         Socket `json:"web"`
		Hook        Socket `json:"hook"`
		TTYD        Socket `json:"ttyd"`
		Tmux        Socket `json:"tmux"`
		CaddyAdmin  Socket `json:"caddyAdmin"`
	} `json:"sockets"`
	Env struct {
		RuntimeDir       Var `json:"runtimeDir"`
		Agents           Var `json:"agents"`
		Seed             Var `json:"seed"`
		Tmux             Var `json:"tmux"`
		DefaultAgent     Var `json:"defaultAgent"`
		Session          Var `json:"session"`
		AgentPid         Var `json:"agentPid"`
		AgentPrompt      Var `json:"agentPrompt"`
		HooksDir         Var `json:"hooksDir"`
		AuthConfig       Var `json:"authConfig"`
		WebDomain        Var `json:"webDomain"`
		TTYD             Var `json:"ttyd"`
		WebAssets        Var `json:"webAssets"`
		TTYDSocket       Var `json:"ttydSocket"`
		Hooks            Var `json:"hooks"`
		SilenceAfter     Var `json:"silenceAfter"`
		ResumePrompt     Var `json:"resumePrompt"`
		LimitFirstWait   Var `json:"limitFirstWait"`
		LimitGrowth      Var `json:"limitGrowth"`
		LimitMaxWait     Var `json:"limitMaxWait"`
		LimitPerMinute   Var `json:"limitPerMinute"`
		WebCheckInterval Var `json:"webCheckInterval"`
	} `json:"env"`
	Routes struct {
		// AuthPages: on a user origin, the auth service's pages (a Caddy
		// path matcher).
		AuthPages Route `json:"authPages"`
		// Verify: the auth service's forward_auth endpoint.
		Verify Route `json:"verify"`
		// Hooks: on the box origin, a user's webhooks (a Caddy matcher).
		Hooks Route `json:"hooks"`
		// Terminal: the web daemon's terminal (ttyd's base path).
		Terminal Route `json:"terminal"`
	} `json:"routes"`
	ExitCodes struct {
		OK            ExitCode `json:"ok"`
		Failure       ExitCode `json:"failure"`
		Usage         ExitCode `json:"usage"`
		Unknown       ExitCode `json:"unknown"`
		Duplicate     ExitCode `json:"duplicate"`
		InvalidName   ExitCode `json:"invalidName"`
		UnknownAgent  ExitCode `json:"unknownAgent"`
		Corrupt       ExitCode `json:"corrupt"`
		NotRunning    ExitCode `json:"notRunning"`
		ForeignServer ExitCode `json:"foreignServer"`
		TmuxVersion   ExitCode `json:"tmuxVersion"`
		ForeignHome   ExitCode `json:"foreignHome"`
		Config        ExitCode `json:"config"`
	} `json:"exitCodes"`
}

// WebAssetPack is one npm package of the workspace's browser libraries.
type WebAssetPack struct {
	Name      string            `json:"name"`
	Version   string            `json:"version"`
	Tarball   string            `json:"tarball"`
	Integrity string            `json:"integrity"`
	License   string            `json:"license"`
	Files     map[string]string `json:"files"`
}

// The contract, one variable per part.
var (
	Names         = &c.Names
	Formats       = &c.Formats
	Web           = &c.Web
	Webhooks      = &c.Webhooks
	Sessions      = &c.Sessions
	Conversations = &c.Conversations
	Uploads       = &c.Uploads
	Apps          = &c.Apps
	WebAssets     = &c.WebAssets
	Attention     = &c.Attention
	Cookies       = &c.Cookies
	Headers       = &c.Headers
	Creds         = &c.Credentials
	Logs          = &c.Logs
	Programs      = &c.Programs
	Units         = &c.Units
	Dirs          = &c.Dirs
	Sockets       = &c.Sockets
	Env           = &c.Env
	Routes        = &c.Routes
	ExitCodes     = &c.ExitCodes
	DiskQuota     = &c.DiskQuota
	UsageLimits   = &c.UsageLimits
	Approvals     = &c.Approvals
)

var c Contract // filled by values.go

// All is the whole contract (for the docs and the tests).
func All() *Contract { return &c }

// Parse decodes a contract strictly (an unknown or misspelt key is an
// error) and compiles every pattern.
func Parse(data []byte) (*Contract, error) {
	k := new(Contract)
	if err := decode(data, k); err != nil {
		return nil, err
	}
	if err := compile(reflect.ValueOf(k).Elem()); err != nil {
		return nil, err
	}
	return k, nil
}

func decode(data []byte, k *Contract) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(k); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the object")
	}
	return nil
}

// compile compiles the pattern of every Name in v, however deep.
func compile(v reflect.Value) error {
	if n, ok := v.Addr().Interface().(*Name); ok {
		re, err := regexp.Compile(anchored(n.Pattern))
		if err != nil {
			return fmt.Errorf("%q: %w", n.Pattern, err)
		}
		n.re = re
		return nil
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			if err := compile(v.Field(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseDuration parses a duration setting: the contract's duration
// format (which Nix checks too), then time.ParseDuration.
func ParseDuration(s string) (time.Duration, error) {
	f := &c.Formats.Duration
	if !f.Match(s) {
		return 0, fmt.Errorf("%q is not %s", s, f.What)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d > Duration(f.Max) {
		return 0, fmt.Errorf("%q is not %s", s, f.What)
	}
	return d, nil
}

// Duration is a duration the contract holds (a default or a bound); it
// panics on one that is not a Go duration, which the contract's tests rule
// out.
func Duration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic("contract: " + err.Error())
	}
	return d
}

// CheckDomain checks the box's domain D as the module's assertion does;
// its error says what is wrong in words (the verdict is the format's).
func CheckDomain(d string) error {
	f := &c.Formats.Domain
	if d == "" {
		return errors.New("domain is empty")
	}
	host, port, hasPort := strings.Cut(d, ":")
	if hasPort {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > f.MaxPort || port[0] == '0' || n == f.DefaultPort {
			return fmt.Errorf("domain %q: the port must be 1-%d without leading zeros, and %d is left out (browsers omit it)", d, f.MaxPort, f.DefaultPort)
		}
	}
	if f.Match(d) && len(host) <= f.MaxHostLength {
		return nil
	}
	labels := strings.Split(host, ".")
	if len(host) > f.MaxHostLength || len(labels) < 2 {
		return fmt.Errorf("domain %q: want a host name of at least two labels and at most %d bytes, with an optional :port", d, f.MaxHostLength)
	}
	for _, l := range labels {
		// A label is one the format takes before a last label "a".
		if !f.Match(l + ".a") {
			return fmt.Errorf("domain %q: %q is not a lowercase host name label", d, l)
		}
	}
	if !f.Match("a." + labels[len(labels)-1]) {
		return fmt.Errorf("domain %q: an IP address cannot have user origins below it", d)
	}
	return fmt.Errorf("domain %q is not %s", d, f.What)
}

// The program's contract is values.go's: contract.json as Go assignments
// (TestValuesAreTheJSONs keeps them equal), not the JSON decoded at every
// start. Its patterns compile at first use (the contract's tests check
// that every one does).
