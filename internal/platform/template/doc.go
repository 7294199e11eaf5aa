// Package template loads employee templates: a directory
// templates/<slug>/ holding template.yaml (who the employee is and which
// tools and plugins it needs) beside the workspace files an installed
// employee starts from (AGENTS.md, SOUL.md, IDENTITY.md, skills/,
// api-tools/, memory/ …).
//
// Load validates everything an install would trip over later — unknown
// keys, a missing required file, a SKILL.md or api-tools YAML that does not
// parse, an api-tools tool the template forgot to allow — so a broken
// template is refused when it is read, with the file named. A loaded
// Template holds a snapshot of its files: later edits on disk do not change
// it, and an install copies exactly what was validated.
//
// Tools derives the agents.list[].tools block an installed employee gets,
// building the sandbox allow list from policy.SandboxDefaultAllow at call
// time so that the agent policy (layer 1) and the sandbox policy (layer 3)
// can never disagree.
//
// Concurrency: a *Template is immutable after Load; its methods are safe
// for concurrent use and return copies.
package template
