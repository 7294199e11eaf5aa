// Package skill reads an agent's skills — markdown instruction files in
// OpenClaw's SKILL.md format — lists them in the system prompt, and turns a
// user's "/skill-name args" message into a direct tool call when the skill
// says so.
//
// A skill is skills/<dir>/SKILL.md in the agent's workspace: YAML
// frontmatter between two "---" lines, then markdown. The model sees each
// skill's name, description and file path (Set.Prompt) and opens the file
// with the read tool when a task fits; the body is never copied into the
// prompt. Frontmatter keys Talon reads:
//
//	name                      skill name; the directory name when absent
//	description               required, at most 1024 characters
//	metadata                  a JSON object (YAML flow or block mapping, or a
//	                          string holding JSON); its "openclaw" key (or
//	                          the legacy "clawdbot" when "openclaw" is absent)
//	                          may hold emoji and the command-* keys below
//	user-invocable            default true: the skill is a slash command
//	disable-model-invocation  default false: true keeps it out of the prompt
//	command-dispatch          "tool": the slash command calls a tool directly
//	command-tool              that tool's name
//	command-arg-mode          "raw" (the only mode, and the default)
//
// OpenClaw reads the command-* keys at the top level of the frontmatter
// (also spelled with underscores); the plugin guide Talon's users follow
// puts them inside metadata.openclaw. Talon accepts both places and refuses
// a skill whose two places disagree, where OpenClaw would silently ignore
// the metadata form. Other frontmatter keys (license, homepage, …) are
// allowed and ignored; metadata gating (requires, os, always, install) is
// not evaluated, so such a skill is listed whatever its requirements say.
//
// Loading is strict: a skill whose file is missing, not a regular file,
// bigger than MaxFileSize (frontmatter bigger than MaxFrontmatter, or
// nesting brackets more than 10 deep, or using YAML aliases), reached
// through a symlink that leaves the workspace (absolute symlinks always
// do), not valid YAML, or fails a check is left out and reported as a
// Warning naming the file and, where known, the line; so is a name another
// skill took first, and every skill past MaxSkills. Nothing is dropped
// silently.
//
// A Set is immutable after Load; all its methods are safe for concurrent
// use.
package skill
