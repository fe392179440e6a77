package tasks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FROM near a common official image and not one is a likely typo; an
// organisation's image, a stage, a build argument and an exact name are
// not.
func TestCheckBaseNames(t *testing.T) {
	tests := []struct {
		name, dockerfile, want string
	}{
		{"typo", "FROM pyhton:3.12-slim\n", "line 1: FROM pyhton:3.12-slim: pyhton is not a common official image; did you mean python:3.12-slim?"},
		{"typo after a stage", "FROM python:3.12 AS build\nRUN true\nFROM ubunut:24.04\n", "line 3: FROM ubunut:24.04: ubunut is not a common official image; did you mean ubuntu:24.04?"},
		{"exact", "FROM node:20\n", ""},
		{"a stage", "FROM python:3.12 AS bulid\nFROM bulid\n", ""},
		{"an organisation's", "FROM ghcr.io/pyhton/x:1\n", ""},
		{"an argument", "ARG BASE=python:3.12\nFROM ${BASE}\n", ""},
		{"a platform flag", "FROM --platform=linux/amd64 debain:12\n", "line 1: FROM debain:12: debain is not a common official image; did you mean debian:12?"},
		{"not near anything", "FROM flightdeckbase\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "environment"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte(tt.dockerfile), 0o644))
			got := checkBaseNames(dir)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, SeverityWarning, got[0].Severity)
			assert.Equal(t, ruleBaseTypo, got[0].Rule)
			assert.Contains(t, got[0].Message, tt.want)
		})
	}
}
