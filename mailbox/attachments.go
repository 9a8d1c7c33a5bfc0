package mailbox

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// extFromMIME maps a MIME type to a file extension (contract section 12).
func extFromMIME(mimeType string) string {
	mt, _, err := mime.ParseMediaType(mimeType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(mimeType, ";", 2)[0]))
	}
	switch mt {
	case "":
		return ""
	case "audio/mp4":
		return "m4a"
	case "text/plain":
		return "txt"
	}
	_, sub, ok := strings.Cut(mt, "/")
	if !ok {
		return ""
	}
	switch sub {
	case "jpeg":
		return "jpg"
	case "mpeg":
		return "mp3"
	case "quicktime":
		return "mov"
	case "png", "webp", "gif", "heic", "ogg", "wav", "mp4", "webm", "pdf", "json", "zip":
		return sub
	}
	return ""
}

// extFromType maps an attachment's coarse type to an extension.
func extFromType(t string) string {
	switch strings.ToLower(t) {
	case "image", "photo":
		return "jpg"
	case "sticker":
		return "webp"
	case "voice":
		return "ogg"
	case "audio":
		return "mp3"
	case "video", "animation":
		return "mp4"
	}
	return ""
}

// SafeBaseName reduces name to its last path element (either separator)
// and returns it if it is a safe name; ok is false when nothing safe is
// left.
func SafeBaseName(name string) (string, bool) {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if ValidateName("name", name) != nil || strings.HasPrefix(name, ".") && strings.Trim(name, ".") == "" {
		return "", false
	}
	return name, true
}

// attachmentName picks the stored name of one inbound attachment.
func attachmentName(a *object, now time.Time) string {
	fallback := "attachment-" + strconv.FormatInt(now.UnixMilli(), 10)
	if n := a.str("name"); n != "" {
		if safe, ok := SafeBaseName(n); ok {
			return safe
		}
		return fallback
	}
	ext := extFromMIME(a.str("mimeType"))
	if ext == "" {
		ext = extFromType(a.str("type"))
	}
	if ext != "" {
		return fallback + "." + ext
	}
	return fallback
}

// extractAttachments writes every attachment that carries base64 data to
// inbox/<id>/<name> (exclusive create, no symlinks followed, inside the
// session folder), replaces data with localPath, and returns the rewritten
// content and the files written. Content without such attachments is
// returned as is.
func (h *Host) extractAttachments(ref SessionRef, id string, content []byte, now time.Time) ([]byte, []string, error) {
	o, err := parseObject("content", content)
	if err != nil {
		return nil, nil, err
	}
	raw, ok := o.get("attachments")
	if !ok || !strings.Contains(string(raw), `"data"`) {
		return content, nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, sessiondb.Errorf(sessiondb.EINVALID, "content.attachments: want an array of objects")
	}
	dir, err := h.layout.SessionDir(ref)
	if err != nil {
		return nil, nil, err
	}
	var written []string
	fail := func(err error) ([]byte, []string, error) {
		for _, p := range written {
			os.Remove(p)
		}
		return nil, nil, err
	}
	changed := false
	for i, item := range list {
		a, err := parseObject("content.attachments["+strconv.Itoa(i)+"]", item)
		if err != nil {
			return fail(err)
		}
		dataRaw, ok := a.get("data")
		if !ok || string(dataRaw) == "null" {
			continue
		}
		var data string
		if err := json.Unmarshal(dataRaw, &data); err != nil {
			return fail(sessiondb.Errorf(sessiondb.EINVALID, "content.attachments[%d].data: want a base64 string", i))
		}
		bytes, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			if bytes, err = base64.RawStdEncoding.DecodeString(data); err != nil {
				return fail(sessiondb.Errorf(sessiondb.EINVALID, "content.attachments[%d].data: not base64: %v", i, err))
			}
		}
		name := attachmentName(a, now)
		rel, full, err := writeExclusive(dir, []string{InboxDirName, id}, name, bytes, h.modes)
		if err != nil {
			return fail(err)
		}
		written = append(written, full)
		a.del("data")
		a.set("localPath", marshalCompact(rel))
		list[i] = a.marshal()
		changed = true
	}
	if !changed {
		return content, nil, nil
	}
	o.set("attachments", marshalCompact(list))
	return o.marshal(), written, nil
}

// writeExclusive writes data to <sessionDir>/<subdirs...>/<name>, creating
// the folders, refusing any symlink on the way, and never overwriting: a
// taken name gets -2, -3… before its extension. It returns the path relative
// to the session folder (slash-separated) and the absolute path.
func writeExclusive(sessionDir string, subdirs []string, name string, data []byte, m modes) (rel, full string, err error) {
	root, err := os.OpenRoot(sessionDir)
	if err != nil {
		return "", "", sessiondb.Wrap(sessiondb.EINTERNAL, err, "open session folder")
	}
	defer root.Close()
	cur := ""
	for _, d := range subdirs {
		if err := ValidateName("folder", d); err != nil {
			return "", "", err
		}
		cur = path.Join(cur, d)
		fi, err := root.Lstat(cur)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			return "", "", sessiondb.Errorf(sessiondb.EINVALID, "%s is a symbolic link: refused", cur)
		case err == nil && !fi.IsDir():
			return "", "", sessiondb.Errorf(sessiondb.EINVALID, "%s is not a folder", cur)
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(cur, m.dir); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", "", sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", cur)
			}
			root.Chmod(cur, m.dir)
			if m.gid > 0 {
				root.Lchown(cur, -1, m.gid)
			}
		case err != nil:
			return "", "", sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", cur)
		}
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" {
		stem, ext = name, ""
	}
	for n := 1; n < 10000; n++ {
		candidate := name
		if n > 1 {
			candidate = stem + "-" + strconv.Itoa(n) + ext
			if len(candidate) > MaxNameLen {
				return "", "", sessiondb.Errorf(sessiondb.EINVALID, "attachment name %q too long to deduplicate", errtext.Clip(name, 64))
			}
		}
		p := path.Join(cur, candidate)
		if fi, err := root.Lstat(p); err == nil {
			if fi.Mode()&fs.ModeSymlink != 0 {
				return "", "", sessiondb.Errorf(sessiondb.EINVALID, "%s is a symbolic link: refused", p)
			}
			continue
		}
		f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, m.file)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", "", sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", p)
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		full = filepath.Join(sessionDir, filepath.FromSlash(p))
		if werr != nil || cerr != nil {
			os.Remove(full)
			return "", "", sessiondb.Wrap(sessiondb.EINTERNAL, errors.Join(werr, cerr), "write %s", p)
		}
		root.Chmod(p, m.file)
		if m.gid > 0 {
			root.Lchown(p, -1, m.gid)
		}
		return p, full, nil
	}
	return "", "", sessiondb.Errorf(sessiondb.ECONFLICT, "too many files named like %q", name)
}

// checkOutboxFile checks one outbox attachment of an outbound row: a safe
// name, a regular file (no symlink) inside outbox/<id>/ of the session.
func checkOutboxFile(sessionDir, outID, name string) (OutboxFile, error) {
	if err := ValidateName("files[] name", name); err != nil {
		return OutboxFile{}, err
	}
	if err := ValidateName("message id", outID); err != nil {
		return OutboxFile{}, err
	}
	rel := path.Join(OutboxDirName, outID, name)
	root, err := os.OpenRoot(sessionDir)
	if err != nil {
		return OutboxFile{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "open session folder")
	}
	defer root.Close()
	for _, p := range []string{OutboxDirName, path.Join(OutboxDirName, outID), rel} {
		fi, err := root.Lstat(p)
		if err != nil {
			return OutboxFile{}, sessiondb.Wrap(sessiondb.ENOTFOUND, err, "outbox file %s", rel)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return OutboxFile{}, sessiondb.Errorf(sessiondb.EINVALID, "%s is a symbolic link: refused", p)
		}
		if p == rel && !fi.Mode().IsRegular() {
			return OutboxFile{}, sessiondb.Errorf(sessiondb.EINVALID, "%s is not a regular file", p)
		}
	}
	full := filepath.Join(sessionDir, filepath.FromSlash(rel))
	if !hasPrefixDir(filepath.Clean(full), filepath.Clean(sessionDir)) {
		return OutboxFile{}, sessiondb.Errorf(sessiondb.EINVALID, "%s is outside the session folder", rel)
	}
	return OutboxFile{Name: name, Path: full}, nil
}
