package groupconc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kobe/groupconc/internal/groupstate"
)

// maxAncestors is the most ancestors a group may have, as many as a task's
// walk has room for. A deeper chain is refused, so a resolver that makes up
// parents cannot go on forever.
const maxAncestors = groupstate.MaxAncestors

// hasParents reports whether p may give a group a parent.
func (p *GroupPolicy) hasParents() bool {
	return p.parentResolver != nil || p.parentSeparator != ""
}

// parentChain returns groupKey's ancestors under p, nearest first, or nil
// at the top. The executor calls it when it makes a group. It stops at an
// ancestor for which kept (if not nil) reports true. That is a group the
// executor holds, whose parent is kept from when it was made, not resolved
// again.
//
// More than maxAncestors ancestors, a key met twice (a group its own parent
// included) and a resolver that panics are errors. Each wraps
// ErrInvalidPolicy and names the chain; the first also ErrInvalidTask
// (deepKey). The ancestors resolved before the
// fault come back with the error, for Explain.
func (p *GroupPolicy) parentChain(groupKey string, kept func(key string) bool) ([]string, error) {
	p = p.orDefault()
	if !p.hasParents() {
		return nil, nil
	}
	var chain []string
	for key := groupKey; ; {
		parent, err := p.parent(key)
		switch {
		case err != nil:
			return chain, fmt.Errorf("%w: group %s: %v (chain %s)",
				ErrInvalidPolicy, quoted(groupKey), err, arrows(groupKey, chain))
		case parent == "":
			return chain, nil
		case parent == groupKey || slices.Contains(chain, parent):
			return chain, fmt.Errorf("%w: group %s has a cycle of parents: %s",
				ErrInvalidPolicy, quoted(groupKey), arrows(groupKey, append(chain, parent)))
		case len(chain) == maxAncestors:
			// "→ …" says the chain goes on past the ninth ancestor. A
			// separator tells at once. A resolver is not asked again.
			more := " → …"
			if p.parentResolver == nil && p.separatorParent(parent) == "" {
				more = ""
			}
			return chain, deepKey{fmt.Errorf("%w: group %s has more than %d ancestors: %s%s",
				ErrInvalidPolicy, quoted(groupKey), maxAncestors, arrows(groupKey, append(chain, parent)), more)}
		}
		chain = append(chain, parent)
		if kept != nil && kept(parent) {
			return chain, nil
		}
		key = parent
	}
}

// crossedCycle is the error for groupKey whose parent's group is being made
// under it, by a Submit under an earlier policy: chain is the keys from
// its parent back to it.
func crossedCycle(groupKey string, chain []string) error {
	return fmt.Errorf("%w: group %s has a cycle of parents across a change of policy: %s",
		ErrInvalidPolicy, quoted(groupKey), arrows(groupKey, chain))
}

// keptTooDeep is the error for groupKey whose parent's group, already
// made, has maxAncestors ancestors. They are kept as they were when it was
// made, whatever the policy now. chain is the parent's key and theirs.
func keptTooDeep(groupKey string, chain []string) error {
	return deepKey{fmt.Errorf("%w: group %s has more than %d ancestors, its parent's group's included: %s",
		ErrInvalidPolicy, quoted(groupKey), maxAncestors, arrows(groupKey, chain))}
}

// deepKey is the error of a group with more ancestors than a walk has room
// for. It wraps ErrInvalidPolicy, as a cycle does, and ErrInvalidTask, as
// an empty key does: the depth is the key's, since a separator makes it.
// So httplimit and grpcgc answer a client's key that is too deep as a bad
// request, not as a fault of the server.
type deepKey struct{ error }

func (e deepKey) Unwrap() []error { return []error{e.error, ErrInvalidTask} }

// parent returns groupKey's parent, "" for none. The error names a panic
// of the resolver. p must not be nil.
func (p *GroupPolicy) parent(groupKey string) (parent string, err error) {
	if f := p.parentResolver; f != nil {
		defer func() {
			if v := recover(); v != nil {
				parent, err = "", fmt.Errorf("ParentResolver panicked for %s: %s", quoted(groupKey), quoted(fmt.Sprint(v)))
			}
		}()
		return f(groupKey), nil
	}
	return p.separatorParent(groupKey), nil
}

// separatorParent returns groupKey's parent by the separator, "" for none.
func (p *GroupPolicy) separatorParent(groupKey string) string {
	if p.parentSeparator == "" {
		return ""
	}
	i := strings.LastIndex(groupKey, p.parentSeparator)
	if i <= 0 {
		return ""
	}
	return groupKey[:i]
}

// arrows writes a chain of keys for an error, each quoted, such as
// "a/b" → "a".
func arrows(groupKey string, chain []string) string {
	var sb strings.Builder
	sb.WriteString(quoted(groupKey))
	for _, k := range chain {
		sb.WriteString(" → ")
		sb.WriteString(quoted(k))
	}
	return sb.String()
}
