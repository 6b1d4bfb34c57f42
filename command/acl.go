package command

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
)

// ACL users (Redis 6+ ACL, the subset lockd supports): users with SHA-256
// password hashes, on/off, nopass, allowed command categories and commands,
// allowed key patterns and pub/sub channel patterns. Users are replicated:
// ACL SETUSER and ACL DELUSER are log entries (KindCommand, args as the client
// sent them except that clear-text passwords are replaced by their hashes; see
// HashACLPasswords) that the FSM applies with SetUser. Everything here is pure.

// The error texts of authentication and authorisation, byte for byte as Redis 7.0
// words them.
const (
	ErrNoAuth       Error  = "NOAUTH Authentication required."
	ErrWrongPass    Error  = "WRONGPASS invalid username-password pair or user is disabled."
	ErrNoPermKey    Denied = "NOPERM this user has no permissions to access one of the keys used as arguments"
	ErrNoPermChan   Denied = "NOPERM this user has no permissions to access one of the channels used as arguments"
	ErrDefaultUser  Error  = "ERR The 'default' user cannot be removed"
	ErrHelloNoAuth  Error  = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	ErrAuthNoPasswd Error  = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
)

// ErrNoPermCommand is the NOPERM error for a command (or "container|sub") the
// user may not run.
func ErrNoPermCommand(fullName string) Denied {
	return Denied("NOPERM this user has no permissions to run the '" + fullName + "' command")
}

// DefaultUserName is the user every connection starts as.
const DefaultUserName = "default"

// ACLCategories are Redis 7.0's command categories, in ACL CAT's order.
var ACLCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting"}

// IsACLCategory reports whether name (without "@") is a category.
func IsACLCategory(name string) bool {
	for _, c := range ACLCategories {
		if c == name {
			return true
		}
	}
	return false
}

// User is one ACL user. A User value is immutable once it is in an ACLTable:
// SetUser returns a changed copy.
type User struct {
	Name        string
	On          bool
	NoPass      bool
	Sanitize    bool     // the "sanitize-payload" flag (RESET sets it; it has no effect in lockd)
	SkipSanit   bool     // the "skip-sanitize-payload" flag (no effect in lockd)
	Passwords   []string // lower-case hex SHA-256 of each password, in the order added
	AllKeys     bool     // ~* / allkeys
	Keys        []string // key patterns when !AllKeys
	AllChannels bool     // &* / allchannels
	Channels    []string // channel patterns when !AllChannels
	AllCommands bool     // the rules start from +@all (true) or -@all
	Rules       []string // command rules applied after the start: "+get", "-@dangerous", "+client|id"
}

// NewUser is a user as ACL SETUSER creates it: off, no password, no keys, no
// channels (Redis 7's acl-pubsub-default resetchannels), no commands.
func NewUser(name string) User { return User{Name: name} }

// DefaultUser is Redis's default user: on, nopass, every key, channel and
// command. With a password (requirepass), nopass is off and the password is its
// only one.
func DefaultUser(requirePass string) User {
	u := User{Name: DefaultUserName, On: true, NoPass: true, AllKeys: true, AllChannels: true, AllCommands: true}
	if requirePass != "" {
		u.NoPass = false
		u.Passwords = []string{HashPassword([]byte(requirePass))}
	}
	return u
}

// HashPassword is how passwords are stored: lower-case hex SHA-256, as Redis does.
func HashPassword(pw []byte) string {
	sum := sha256.Sum256(pw)
	return hex.EncodeToString(sum[:])
}

// CheckPassword reports whether pass opens u: u is on, and nopass or pass is
// one of its passwords.
func (u *User) CheckPassword(pass []byte) bool {
	if !u.On {
		return false
	}
	if u.NoPass {
		return true
	}
	h := HashPassword(pass)
	for _, p := range u.Passwords {
		if p == h {
			return true
		}
	}
	return false
}

// Unrestricted reports whether u may run every command on every key and
// channel (the checks can be skipped).
func (u *User) Unrestricted() bool {
	return u.AllCommands && len(u.Rules) == 0 && u.AllKeys && u.AllChannels
}

// aclRuleError is why one SETUSER rule failed, in Redis's words.
type aclRuleError string

const (
	errRuleSyntax   aclRuleError = "Syntax error"
	errRuleUnknown  aclRuleError = "Unknown command or category name in ACL"
	errRuleKeyAfter aclRuleError = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	errRuleChAfter  aclRuleError = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	errRuleNoPass   aclRuleError = "The password you are trying to remove from the user does not exist"
	errRuleBadHash  aclRuleError = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
)

// SetUser applies ACL SETUSER rules to u, in order, and returns the changed
// copy; u itself is not changed. When one rule is invalid nothing is applied and
// the error is Redis's "ERR Error in ACL SETUSER modifier '<rule>': <why>".
// With strict set, command names in +cmd/-cmd rules must be commands lockd
// knows (the front door checks); the FSM applies rules that the front door
// accepted without that check, so that replicas of different versions agree.
func SetUser(u User, rules [][]byte, strict bool) (User, error) {
	u = u.clone()
	for _, r := range rules {
		if err := u.apply(string(r), strict); err != "" {
			return User{}, Echo("ERR Error in ACL SETUSER modifier '", r, "': "+string(err))
		}
	}
	return u, nil
}

func (u User) clone() User {
	u.Passwords = append([]string(nil), u.Passwords...)
	u.Keys = append([]string(nil), u.Keys...)
	u.Channels = append([]string(nil), u.Channels...)
	u.Rules = append([]string(nil), u.Rules...)
	return u
}

func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func removeString(list []string, s string) ([]string, bool) {
	for i, x := range list {
		if x == s {
			return append(list[:i:i], list[i+1:]...), true
		}
	}
	return list, false
}

// addPattern applies a key (~) or channel (&) rule's pattern: "*" allows
// every one and drops the listed patterns; another pattern after "*" is the
// error errAfter, as in Redis.
func addPattern(all *bool, list *[]string, pattern string, errAfter aclRuleError) aclRuleError {
	if pattern == "*" {
		*all, *list = true, nil
		return ""
	}
	if *all {
		return errAfter
	}
	*list = addUnique(*list, pattern)
	return ""
}

func addUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// apply applies one rule; "" on success.
func (u *User) apply(r string, strict bool) aclRuleError {
	switch strings.ToLower(r) {
	case "on":
		u.On = true
		return ""
	case "off":
		u.On = false
		return ""
	case "nopass":
		u.NoPass, u.Passwords = true, nil
		return ""
	case "resetpass":
		u.NoPass, u.Passwords = false, nil
		return ""
	case "allkeys":
		u.AllKeys, u.Keys = true, nil
		return ""
	case "resetkeys":
		u.AllKeys, u.Keys = false, nil
		return ""
	case "allchannels":
		u.AllChannels, u.Channels = true, nil
		return ""
	case "resetchannels":
		u.AllChannels, u.Channels = false, nil
		return ""
	case "allcommands":
		u.AllCommands, u.Rules = true, nil
		return ""
	case "nocommands":
		u.AllCommands, u.Rules = false, nil
		return ""
	case "sanitize-payload":
		u.Sanitize, u.SkipSanit = true, false
		return ""
	case "skip-sanitize-payload":
		u.Sanitize, u.SkipSanit = false, true
		return ""
	case "reset":
		*u = User{Name: u.Name, Sanitize: true}
		return ""
	}
	if r == "" {
		return "" // Redis accepts an empty rule and does nothing
	}
	switch r[0] {
	case '>':
		u.Passwords, u.NoPass = addUnique(u.Passwords, HashPassword([]byte(r[1:]))), false
	case '#':
		if !isHexHash(r[1:]) {
			return errRuleBadHash
		}
		u.Passwords, u.NoPass = addUnique(u.Passwords, r[1:]), false
	case '<', '!':
		h := r[1:]
		if r[0] == '<' {
			h = HashPassword([]byte(h))
		} else if !isHexHash(h) {
			return errRuleBadHash
		}
		var ok bool
		if u.Passwords, ok = removeString(u.Passwords, h); !ok {
			return errRuleNoPass
		}
	case '~':
		return addPattern(&u.AllKeys, &u.Keys, r[1:], errRuleKeyAfter)
	case '&':
		return addPattern(&u.AllChannels, &u.Channels, r[1:], errRuleChAfter)
	case '+', '-':
		return u.addCommandRule(r, strict)
	default:
		// Selectors "(…)" and the read/write key permissions "%R~", "%W~" are
		// not supported.
		return errRuleSyntax
	}
	return ""
}

// addCommandRule applies +cmd, -cmd, +cmd|sub, +@cat, -@cat, +@all, -@all.
func (u *User) addCommandRule(r string, strict bool) aclRuleError {
	plus := r[0] == '+'
	target := strings.ToLower(r[1:])
	if target == "@all" {
		u.AllCommands, u.Rules = plus, nil
		return ""
	}
	if cat, ok := strings.CutPrefix(target, "@"); ok {
		if !IsACLCategory(cat) {
			return errRuleUnknown
		}
	} else {
		if target == "" || strings.Count(target, "|") > 1 {
			return errRuleSyntax
		}
		if strict {
			if _, ok := rows[target]; !ok {
				return errRuleUnknown
			}
		}
	}
	// A later rule for the same target (for a container, for any of its
	// subcommands; for a category, for any command wholly in it) replaces the
	// earlier ones, which it overrides: the list stays short and reads as
	// Redis describes it.
	cat, isCat := strings.CutPrefix(target, "@")
	kept := u.Rules[:0:0]
	for _, old := range u.Rules {
		t := old[1:]
		if t == target || strings.HasPrefix(t, target+"|") || isCat && !strings.HasPrefix(t, "@") && categoryCovers(cat, t) {
			continue
		}
		kept = append(kept, old)
	}
	sign := "-"
	if plus {
		sign = "+"
	}
	u.Rules = append(kept, sign+target)
	return ""
}

// categoryCovers reports whether every command name stands for (itself, or
// each subcommand of a container) is in category cat (without "@");
// categoryTouches whether any is.
func categoryCovers(cat, name string) bool {
	all, _ := categoryOverlap(cat, name)
	return all
}

func categoryTouches(cat, name string) bool {
	_, any := categoryOverlap(cat, name)
	return any
}

func categoryOverlap(cat, name string) (all, any bool) {
	has := func(n string) bool {
		s, ok := rows[n]
		if !ok {
			return false
		}
		for _, c := range s.Meta.Categories {
			if c[1:] == cat {
				return true
			}
		}
		return false
	}
	if strings.Contains(name, "|") {
		h := has(name)
		return h, h
	}
	all, subs := true, 0
	for n := range rows {
		if strings.HasPrefix(n, name+"|") {
			subs++
			if has(n) {
				any = true
			} else {
				all = false
			}
		}
	}
	if subs == 0 {
		h := has(name)
		return h, h
	}
	return all, any
}

// CanRun reports whether u may run the command fullName ("get", or
// "container|sub" for a subcommand) whose categories (with "@") are cats.
func (u *User) CanRun(fullName string, cats []string) bool {
	allowed := u.AllCommands
	container, _, isSub := strings.Cut(fullName, "|")
	for _, r := range u.Rules {
		t := r[1:]
		var match bool
		if cat, ok := strings.CutPrefix(t, "@"); ok {
			for _, c := range cats {
				if c[1:] == cat {
					match = true
					break
				}
			}
		} else {
			match = t == fullName || (isSub && t == container)
		}
		if match {
			allowed = r[0] == '+'
		}
	}
	return allowed
}

// CanKey reports whether u may use key.
func (u *User) CanKey(key []byte) bool {
	if u.AllKeys {
		return true
	}
	for _, p := range u.Keys {
		if Match([]byte(p), key) {
			return true
		}
	}
	return false
}

// CanChannel reports whether u may use channel; a pattern (PSUBSCRIBE) must be
// one of u's patterns literally, as in Redis.
func (u *User) CanChannel(channel []byte, isPattern bool) bool {
	if u.AllChannels {
		return true
	}
	for _, p := range u.Channels {
		if isPattern && p == string(channel) || !isPattern && Match([]byte(p), channel) {
			return true
		}
	}
	return false
}

// Flags are the user's flags as ACL GETUSER lists them.
func (u *User) Flags() []string {
	var out []string
	if u.On {
		out = append(out, "on")
	} else {
		out = append(out, "off")
	}
	if u.NoPass {
		out = append(out, "nopass")
	}
	if u.SkipSanit {
		out = append(out, "skip-sanitize-payload")
	}
	if u.Sanitize {
		out = append(out, "sanitize-payload")
	}
	return out
}

// CommandRules is the user's command rules as ACL GETUSER shows them: the
// category rules first, then the command rules, as Redis 7.0 lists them —
// unless a command rule comes before a category rule that touches it, when
// moving the category would change what the rules mean (then they are listed
// in the order they apply).
func (u *User) CommandRules() string {
	s := "-@all"
	if u.AllCommands {
		s = "+@all"
	}
	var cats, cmds []string
	ordered := true
	for _, r := range u.Rules {
		if cat, ok := strings.CutPrefix(r[1:], "@"); ok {
			cats = append(cats, r)
			for _, c := range cmds {
				if categoryTouches(cat, c[1:]) {
					ordered = false
				}
			}
		} else {
			cmds = append(cmds, r)
		}
	}
	rules := u.Rules
	if ordered {
		rules = append(cats, cmds...)
	}
	for _, r := range rules {
		s += " " + r
	}
	return s
}

// KeyRules is the user's key patterns as ACL GETUSER shows them.
func (u *User) KeyRules() string { return patternRules("~", u.AllKeys, u.Keys) }

// ChannelRules is the user's channel patterns as ACL GETUSER shows them.
func (u *User) ChannelRules() string { return patternRules("&", u.AllChannels, u.Channels) }

// patternRules writes patterns with their rule prefix ("~" keys, "&"
// channels), or prefix+"*" for all.
func patternRules(prefix string, all bool, patterns []string) string {
	if all {
		return prefix + "*"
	}
	parts := make([]string, len(patterns))
	for i, p := range patterns {
		parts[i] = prefix + p
	}
	return strings.Join(parts, " ")
}

// Describe is the user's line in ACL LIST: "user <name> <flags> <#hashes>
// <keys> <channels> <commands>", as Redis 7.0 writes it.
func (u *User) Describe() string {
	parts := []string{"user", u.Name}
	parts = append(parts, u.Flags()...)
	for _, p := range u.Passwords {
		parts = append(parts, "#"+p)
	}
	if k := u.KeyRules(); k != "" {
		parts = append(parts, k)
	}
	if !u.AllChannels {
		parts = append(parts, "resetchannels")
	}
	if c := u.ChannelRules(); c != "" {
		parts = append(parts, c)
	}
	parts = append(parts, u.CommandRules())
	return strings.Join(parts, " ")
}

// ACLTable is the replicated set of users, sorted by name. It is immutable:
// changes make a new table.
type ACLTable struct {
	users []User
}

// NewACLTable builds a table from users (any order; a later duplicate wins).
func NewACLTable(users []User) *ACLTable {
	t := &ACLTable{}
	for _, u := range users {
		t = t.with(u)
	}
	return t
}

// Users returns the users, sorted by name. The slice must not be modified.
func (t *ACLTable) Users() []User {
	if t == nil {
		return nil
	}
	return t.users
}

func (t *ACLTable) find(name string) (int, bool) {
	if t == nil {
		return 0, false
	}
	i := sort.Search(len(t.users), func(i int) bool { return t.users[i].Name >= name })
	return i, i < len(t.users) && t.users[i].Name == name
}

// User finds a user by name (case-sensitive, as in Redis).
func (t *ACLTable) User(name string) (*User, bool) {
	i, ok := t.find(name)
	if !ok {
		return nil, false
	}
	return &t.users[i], true
}

// with returns a table with u added or replaced.
func (t *ACLTable) with(u User) *ACLTable {
	i, ok := t.find(u.Name)
	next := append([]User(nil), t.Users()...)
	if ok {
		next[i] = u
	} else {
		next = append(next, User{})
		copy(next[i+1:], next[i:])
		next[i] = u
	}
	return &ACLTable{users: next}
}

// With returns a table with u added or replaced; t is unchanged.
func (t *ACLTable) With(u User) *ACLTable { return t.with(u) }

// Without returns a table without the named users, and how many it removed.
func (t *ACLTable) Without(names []string) (*ACLTable, int) {
	n := 0
	next := make([]User, 0, len(t.Users()))
	for _, u := range t.Users() {
		drop := false
		for _, name := range names {
			if u.Name == name {
				drop = true
				break
			}
		}
		if drop {
			n++
		} else {
			next = append(next, u)
		}
	}
	if n == 0 {
		return t, 0
	}
	return &ACLTable{users: next}, n
}

// ACLSetUser is ACL SETUSER name [rule ...]: create or change a user.
type ACLSetUser struct {
	Name  []byte
	Rules [][]byte
}

// ACLDelUser is ACL DELUSER name [name ...].
type ACLDelUser struct{ Names [][]byte }

func (ACLSetUser) isOp() {}
func (ACLDelUser) isOp() {}

// ACL SETUSER and ACL DELUSER reach the log as KindCommand entries: their rows
// (ACLSetUserSpec, ACLDelUserSpec: door.go) parse their argument vectors.

// HashACLPasswords returns the argument vector of ACL SETUSER with every
// clear-text password rule (">pw", "<pw") replaced by its hash ("#h", "!h"), so
// that no password is written to the log. Other argument vectors are returned
// unchanged.
func HashACLPasswords(args [][]byte) [][]byte {
	if len(args) < 3 || !eq(args[0], "acl") || !eq(args[1], "setuser") {
		return args
	}
	out := append([][]byte(nil), args...)
	for i := 3; i < len(out); i++ {
		r := out[i]
		if len(r) == 0 || (r[0] != '>' && r[0] != '<') {
			continue
		}
		prefix := byte('#')
		if r[0] == '<' {
			prefix = '!'
		}
		out[i] = append([]byte{prefix}, HashPassword(r[1:])...)
	}
	return out
}

// SlotKeys returns the keys of a command that live in slots: those
// CommandKeys finds (a script's declared keys among them), except a
// namespace's prefix (FlagPrefixKey), which is configuration of every group,
// not a key of one slot. A group checks them against the slots it is handing
// over (fsm.Keyspace.CheckKeys); the RESP door redirects by them.
func SlotKeys(args [][]byte) [][]byte {
	if len(args) == 0 {
		return nil
	}
	if s := rowOf(args); s != nil && s.Flags.Has(FlagPrefixKey) {
		return nil
	}
	return CommandKeys(args)
}

// CommandKeys returns the keys a request names: its row's (Spec.Keys; the
// subcommand's row when args[1] names one); nil for an unknown command.
func CommandKeys(args [][]byte) [][]byte {
	if len(args) == 0 {
		return nil
	}
	if inner := popWaitInner(args); inner != nil {
		return CommandKeys(inner) // POP.WAIT tag BLPOP … (list.go)
	}
	s := rowOf(args)
	if s == nil {
		return nil
	}
	return s.Keys(args)
}

// specKeys applies one key specification to args (Redis's
// getKeysUsingKeySpecs, for "index"/"keyword" begin and "range"/"keynum" find).
func specKeys(ks KeySpec, args [][]byte) [][]byte {
	argc := len(args)
	first := 0
	switch ks.Begin.Type {
	case "index":
		first = ks.Begin.Index
	case "keyword":
		start, end, step := ks.Begin.StartFrom, argc-1, 1
		if start < 0 {
			start, end, step = argc+start, 0, -1
		}
		for i := start; i >= 1 && i < argc && (step > 0 && i <= end || step < 0 && i >= end); i += step {
			if eq(args[i], ks.Begin.Keyword) {
				first = i + 1
				break
			}
		}
		if first == 0 {
			return nil
		}
	default:
		return nil
	}
	if first >= argc {
		return nil
	}
	var last, step int
	switch ks.Find.Type {
	case "range":
		step = max(ks.Find.KeyStep, 1)
		switch {
		case ks.Find.LastKey >= 0:
			last = first + ks.Find.LastKey
		case ks.Find.Limit <= 1:
			last = argc + ks.Find.LastKey
		default:
			last = first + (argc-first)/ks.Find.Limit + ks.Find.LastKey
		}
	case "keynum":
		step = max(ks.Find.KeyStep, 1)
		idx := first + ks.Find.KeyNumIdx
		if idx >= argc {
			return nil
		}
		n, err := strconv.Atoi(string(args[idx]))
		if err != nil || n <= 0 {
			return nil
		}
		first += ks.Find.FirstKey
		last = first + (n-1)*step
	default:
		return nil
	}
	var out [][]byte
	for i := first; i <= last && i < argc; i += step {
		out = append(out, args[i])
	}
	return out
}

// CommandChannels returns the channels (or, isPattern, the channel patterns) a
// pub/sub request names: PUBLISH, SUBSCRIBE and PSUBSCRIBE.
func CommandChannels(args [][]byte) (channels [][]byte, isPattern bool) {
	if len(args) < 2 {
		return nil, false
	}
	switch {
	case eq(args[0], "publish"):
		return args[1:2], false
	case eq(args[0], "subscribe"):
		return args[1:], false
	case eq(args[0], "psubscribe"):
		return args[1:], true
	}
	return nil, false
}

// Authorize checks that u may run the request args: the command (or
// subcommand) fullName with its categories, its keys and its channels. It
// returns nil or the NOPERM error Redis answers.
func (u *User) Authorize(fullName string, args [][]byte) error {
	if u.Unrestricted() {
		return nil
	}
	var cats []string
	if s, ok := rows[fullName]; ok {
		cats = s.Meta.Categories
	}
	if !u.CanRun(fullName, cats) {
		return ErrNoPermCommand(fullName)
	}
	if !u.AllKeys {
		for _, k := range CommandKeys(args) {
			if !u.CanKey(k) {
				return ErrNoPermKey
			}
		}
	}
	if !u.AllChannels {
		chans, pat := CommandChannels(args)
		for _, c := range chans {
			if !u.CanChannel(c, pat) {
				return ErrNoPermChan
			}
		}
	}
	return nil
}

// FullName is the name ACL rules and NOPERM use for a request: the command's
// lower-case name, or "container|sub" when the command has subcommands and
// args[1] is one of them.
func FullName(args [][]byte) string {
	if inner := popWaitInner(args); inner != nil {
		return FullName(inner) // POP.WAIT tag BLPOP …: the inner command's rules (list.go)
	}
	name := strings.ToLower(string(args[0]))
	if len(args) > 1 {
		full := name + "|" + strings.ToLower(string(args[1]))
		if _, ok := rows[full]; ok {
			return full
		}
	}
	return name
}

// CommandsInCategory lists the commands and subcommands (as "container|sub")
// lockd knows in category cat (without "@"), sorted.
func CommandsInCategory(cat string) []string {
	var out []string
	for name, s := range rows {
		for _, c := range s.Meta.Categories {
			if c == "@"+cat {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
