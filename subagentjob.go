package sessiondb

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// CheckSubagentJob refuses an empty job id of a subagent transition.
func CheckSubagentJob(job string) error {
	if strings.TrimSpace(job) == "" {
		return Errorf(EINVALID, "job id is empty")
	}
	return nil
}

// SubagentNotRunningJob is the conflict of a transition that found the
// record a (re-read after its compare-and-set changed nothing) not running
// job.
func SubagentNotRunningJob(a Subagent, job string) error {
	if a.Status != SubagentRunning {
		return Errorf(ECONFLICT, "subagent %q is %s, not running job %q", a.ID, a.Status, job)
	}
	return Errorf(ECONFLICT, "subagent %q is running job %q, not %q", a.ID, a.RunningJobID, job)
}

// SubagentBusy is the conflict of a dispatch to a record running job.
func SubagentBusy(id, job string) error {
	return Errorf(ECONFLICT, "%s (subagent %s, job %s)", JobAlreadyRunning, id, job)
}

// SubagentCursor is the listing cursor after the record last of a page
// (ordered by updated_at, then id, both descending).
func SubagentCursor(last Subagent) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.UpdatedAt, 10) + "\x00" + last.ID))
}

// ParseSubagentCursor reads a SubagentCursor back; anything else is
// invalid.
func ParseSubagentCursor(c string) (updatedAt int64, id string, err error) {
	raw, derr := base64.RawURLEncoding.DecodeString(c)
	at, id, ok := strings.Cut(string(raw), "\x00")
	ms, perr := strconv.ParseInt(at, 10, 64)
	if derr != nil || !ok || perr != nil {
		return 0, "", Errorf(EINVALID, "cursor %q is not one a listing returned", clip(c))
	}
	return ms, id, nil
}
