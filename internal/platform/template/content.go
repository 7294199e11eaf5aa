package template

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"talon/internal/plugin"
	"talon/internal/plugin/yamltool"
	"talon/internal/policy"
	"talon/internal/skill"
)

// checkContent parses what the gateway will parse at run time — every
// skills/*/SKILL.md and api-tools/*.yaml — and checks that the template
// enables and allows the API tools it ships, the two steps seed 000 says
// are most often missed.
func checkContent(t *Template, files []File) error {
	var apiTools []string
	for _, f := range files {
		dir, name := path.Split(f.Path)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case dir == skill.Dir && !f.Mode.IsDir():
			return fmt.Errorf("%s: a skill is a directory holding %s, not a file", f.Path, skill.FileName)
		case dir == skill.Dir:
			p := f.Path + "/" + skill.FileName
			i := slices.IndexFunc(files, func(g File) bool { return g.Path == p })
			if i < 0 || files[i].Mode.IsDir() {
				return fmt.Errorf("%s is missing: every directory under skills/ is one skill", p)
			}
			if _, err := skill.Parse(p, files[i].Data); err != nil {
				return err
			}
		case dir == "api-tools":
			if f.Mode.IsDir() || (path.Ext(name) != ".yaml" && path.Ext(name) != ".yml") {
				return fmt.Errorf("%s: api-tools/ holds one .yaml file per tool and nothing else", f.Path)
			}
			tool, err := yamltool.Parse(f.Path, f.Data)
			if err != nil {
				return err
			}
			if slices.Contains(apiTools, tool.Name) {
				return fmt.Errorf("%s: tool %q is declared by another file too", f.Path, tool.Name)
			}
			apiTools = append(apiTools, tool.Name)
			if !allowsAPITool(t.AlsoAllow, tool.Name) {
				return fmt.Errorf("%s: tool %q is not in requiredTools.alsoAllow, so no agent could call it; add it there", f.Path, tool.Name)
			}
		}
	}
	if len(apiTools) > 0 && !slices.Contains(t.Plugins, plugin.APITools) {
		return fmt.Errorf("api-tools/ declares %s but requiredTools.plugins does not list %q; add it there",
			strings.Join(apiTools, ", "), plugin.APITools)
	}
	return nil
}

// allowsAPITool reports whether an alsoAllow list names an api-tools tool:
// by name, by the plugin's id, or through group:plugins (spec §9.2).
func allowsAPITool(allow []string, name string) bool {
	return slices.Contains(allow, name) || slices.Contains(allow, plugin.APITools) || slices.Contains(allow, policy.GroupPlugins)
}
