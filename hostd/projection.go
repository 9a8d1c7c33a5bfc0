package hostd

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Projection is what a session's inbound.db shows the agent of the
// registry (mailbox contract section 11): its session_routing (the
// session's own chat and thread; all empty without a chat) and its
// destinations (the agent group's rows whose targets exist, by local name;
// a channel shows the chat's name, an agent group its name).
func (r *Router) Projection(ctx context.Context, s sessiondb.AgentSession) (mailbox.Spawn, error) {
	var sp mailbox.Spawn
	if s.MessagingGroupID != "" {
		mg, err := r.reg.GetMessagingGroup(ctx, s.MessagingGroupID)
		switch {
		case err == nil:
			sp.Routing = mailbox.Routing{ChannelType: mg.ChannelType, PlatformID: mg.PlatformID, ThreadID: s.ThreadID}
		case sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND:
			return sp, err
		}
	}
	ds, err := r.destinations(ctx, s.AgentGroupID)
	sp.Destinations = ds
	return sp, err
}

// destinations projects the group's destinations, skipping dangling ones.
func (r *Router) destinations(ctx context.Context, agentGroupID string) ([]mailbox.Destination, error) {
	rows, err := r.reg.ResolveDestinations(ctx, agentGroupID)
	if err != nil {
		return nil, err
	}
	out := make([]mailbox.Destination, 0, len(rows))
	for _, d := range rows {
		switch {
		case d.Chat != nil:
			name := d.Chat.Name
			if name == "" {
				name = d.LocalName
			}
			out = append(out, mailbox.Destination{Name: d.LocalName, DisplayName: name, Type: mailbox.DestinationChannel,
				ChannelType: d.Chat.ChannelType, PlatformID: d.Chat.PlatformID})
		case d.Agent != nil:
			out = append(out, mailbox.Destination{Name: d.LocalName, DisplayName: d.Agent.Name, Type: mailbox.DestinationAgent,
				AgentGroupID: d.Agent.ID})
		}
	}
	return out, nil
}

// project writes s's routing and destinations into its inbound.db. It
// never touches .heartbeat (PrepareSpawn's first step): the agent may be
// running.
func (r *Router) project(ctx context.Context, s sessiondb.AgentSession) error {
	sp, err := r.Projection(ctx, s)
	if err != nil {
		return err
	}
	if err := r.h.WriteSessionRouting(ctx, s.Ref(), sp.Routing); err != nil {
		return err
	}
	return r.h.WriteDestinations(ctx, s.Ref(), sp.Destinations)
}

// ReprojectResult counts one re-projection.
type ReprojectResult struct {
	Groups   int `json:"groups"`
	Sessions int `json:"sessions"` // folders rewritten
	Skipped  int `json:"skipped"`  // active sessions without a mailbox folder
}

// Reproject rewrites the destinations projection of every active session
// of the given agent groups whose mailbox folder exists (spec A8: every
// change of a group's destinations, including the one a new wiring makes,
// reaches its running agents at once). Sessions are written by
// RouterConfig.ReprojectWorkers at a time; the first failure is returned
// after the others were tried.
func (r *Router) Reproject(ctx context.Context, agentGroupIDs ...string) (ReprojectResult, error) {
	var res ReprojectResult
	seen := map[string]bool{}
	var firstErr error
	for _, ag := range agentGroupIDs {
		if seen[ag] {
			continue
		}
		seen[ag] = true
		res.Groups++
		ds, err := r.destinations(ctx, ag)
		if err != nil {
			return res, err
		}
		var refs []mailbox.SessionRef
		f := sessiondb.AgentSessionFilter{AgentGroupID: ag, Status: sessiondb.SessionActive, Limit: 1000}
		for {
			page, err := r.reg.ListAgentSessions(ctx, f)
			if err != nil {
				return res, err
			}
			for _, s := range page.Sessions {
				refs = append(refs, s.Ref())
			}
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
		n, skipped, err := r.writeDestinations(ctx, refs, ds)
		res.Sessions += n
		res.Skipped += skipped
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return res, firstErr
}

// writeDestinations writes ds into each existing folder of refs, a few at
// a time.
func (r *Router) writeDestinations(ctx context.Context, refs []mailbox.SessionRef, ds []mailbox.Destination) (written, skipped int, err error) {
	var mu sync.Mutex
	fanOut(ctx, r.cfg.ReprojectWorkers, refs, func(ref mailbox.SessionRef) {
		p, perr := r.h.Layout().InboundPath(ref)
		if perr == nil {
			if _, serr := os.Stat(p); errors.Is(serr, os.ErrNotExist) {
				mu.Lock()
				skipped++
				mu.Unlock()
				return
			}
			perr = r.h.WriteDestinations(ctx, ref, ds)
		}
		mu.Lock()
		if perr != nil {
			if err == nil {
				err = sessiondb.Wrap("", perr, "re-project destinations into %s", ref)
			}
		} else {
			written++
		}
		mu.Unlock()
	})
	if err == nil && ctx.Err() != nil {
		err = sessiondb.Wrap(sessiondb.EBUSY, ctx.Err(), "re-project destinations")
	}
	return written, skipped, err
}

// GroupsTargeting returns the agent groups that hold a destination to the
// target (a chat or an agent group), whose projections show its name: the
// groups to re-project after the target is renamed or deleted.
func (r *Router) GroupsTargeting(ctx context.Context, tt sessiondb.TargetType, targetID string) ([]string, error) {
	groups, err := r.reg.ListAgentGroups(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range groups {
		ds, err := r.reg.ListDestinations(ctx, g.ID)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if d.TargetType == tt && d.TargetID == targetID {
				out = append(out, g.ID)
				break
			}
		}
	}
	return out, nil
}
