package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/distribution/reference"
)

// ParseImageMap reads an image map written as FLIGHTDECK_IMAGE_MAP is:
// "from=to,from=to", e.g. "python:3.12-slim=flightdeck/base:bookworm".
// Blank items are ignored; a reference that does not parse is an error
// naming it.
func ParseImageMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		from, to, ok := strings.Cut(item, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("image map item %q: want from=to", item)
		}
		for _, ref := range []string{from, to} {
			if _, err := reference.ParseNormalizedNamed(ref); err != nil {
				return nil, fmt.Errorf("image map item %q: %q is not an image reference: %w", item, ref, err)
			}
		}
		m[from] = to
	}
	return m, nil
}

// MapImage applies an image map to a reference. A key matches the reference
// as written or in normalized form, so "python:3.12" matches
// "<default registry>/library/python:3.12" and "python" matches "python:latest". A
// digest-pinned reference ("python:3.12-slim@sha256:...") that no key
// matches is looked up again without its digest, so a map written for
// "python:3.12-slim" covers the pinned forms that importers write too.
func MapImage(ref string, m map[string]string) (string, bool) {
	if to, ok := mapExact(ref, m); ok {
		return to, true
	}
	if bare, ok := withoutDigest(ref); ok {
		if to, ok := mapExact(bare, m); ok {
			return to, true
		}
	}
	return ref, false
}

// mapExact matches ref against the map's keys as written, then in
// normalized form.
func mapExact(ref string, m map[string]string) (string, bool) {
	if to, ok := m[ref]; ok {
		return to, true
	}
	norm := normalizeRef(ref)
	if norm == "" {
		return ref, false
	}
	keys := slices.Sorted(maps.Keys(m))
	for _, from := range keys {
		if normalizeRef(from) == norm {
			return m[from], true
		}
	}
	return ref, false
}

// withoutDigest is a digest-pinned reference without its digest, as it was
// written (name, or name:tag); ok is false for a reference with no digest.
func withoutDigest(ref string) (string, bool) {
	name, digest, found := strings.Cut(ref, "@")
	if !found || name == "" || digest == "" {
		return "", false
	}
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		return "", false
	}
	return name, true
}

// normalizeRef is the fully qualified form of an image reference with the
// default tag, or "" when ref does not parse.
func normalizeRef(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ""
	}
	return reference.TagNameOnly(named).String()
}

// IsOfficialImage reports whether ref names one of Docker Hub's official
// images (python:3.12-slim, debian, docker.io/library/ubuntu:24.04): no
// registry host and no organisation. Only these does flightdeck stand its
// own base image in for; an image of an organisation or another registry
// is too particular to guess.
func IsOfficialImage(ref string) bool {
	_, _, ok := OfficialImage(ref)
	return ok
}

// OfficialImage splits an official image's reference into its name and
// tag ("python", "3.12-slim" for docker.io/library/python:3.12-slim; the
// tag is "" when ref has none); ok is false for any other reference.
func OfficialImage(ref string) (name, tag string, ok bool) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", "", false
	}
	path := reference.Path(named)
	name = strings.TrimPrefix(path, "library/")
	if reference.Domain(named) != "docker.io" || !strings.HasPrefix(path, "library/") || strings.Contains(name, "/") {
		return "", "", false
	}
	if t, tagged := named.(reference.Tagged); tagged {
		tag = t.Tag()
	}
	return name, tag, true
}
