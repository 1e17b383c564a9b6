package apitoken

import (
	"slices"
	"strings"
)

// Role is what a token may do through the HTTP API. Each role may do what
// the roles below it may: viewer < operator < admin.
type Role string

// The roles, as CFG_API_TOKENS.ROLE stores them (lower case).
const (
	// Viewer reads.
	Viewer Role = "viewer"
	// Operator also triggers, cancels, pauses, resumes, marks, reruns and
	// backfills.
	Operator Role = "operator"
	// Admin also manages tokens.
	Admin Role = "admin"
)

// Roles lists every role, lowest first.
var Roles = []Role{Viewer, Operator, Admin}

// ParseRole returns the role named s, written exactly as Roles writes it
// (in lower case, as CFG_API_TOKENS stores it); ok is false when s names
// none. The command line and the HTTP API both take a role by this rule.
func ParseRole(s string) (r Role, ok bool) {
	r = Role(s)
	return r, r.rank() > 0
}

// rank is the role's place in Roles, counted from 1; 0 for no role.
func (r Role) rank() int { return slices.Index(Roles, r) + 1 }

// Allows reports whether a token of role r may do what needs the required
// role. A role that is none of Roles allows nothing, and nothing needs it.
func (r Role) Allows(required Role) bool {
	return r.rank() > 0 && required.rank() > 0 && r.rank() >= required.rank()
}

// Names returns the roles' names, lowest first.
func Names() []string {
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return names
}

// roleList names the roles for messages: "viewer, operator or admin".
func roleList() string {
	names := Names()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
