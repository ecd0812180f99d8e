package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/plugins/policy"
)

func TestSecretsFoundAndMasked(t *testing.T) {
	want := map[string]string{
		"secrets.aws_access_key": "AKIAIOSFODNN7EXAMPLE",
		"secrets.aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"secrets.github_token":   "ghp_" + strings.Repeat("a1B2", 9),
		"secrets.slack_token":    "xoxb-1234567890-abcdefghij",
		"secrets.password":       "hunter2hunter2",
		"secrets.private_key":    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw",
	}
	src := "key = '" + want["secrets.aws_access_key"] + "'\n" +
		"aws_secret_access_key = \"" + want["secrets.aws_secret_key"] + "\"\n" +
		"# token: " + want["secrets.github_token"] + "\n" +
		"slack = '" + want["secrets.slack_token"] + "'\n" +
		"password = \"" + want["secrets.password"] + "\"\n" +
		"k = '''-----BEGIN RSA PRIVATE KEY-----\n" + want["secrets.private_key"] + "\n-----END RSA PRIVATE KEY-----'''\n"
	v, err := secrets{}.Check(context.Background(), policy.Request{Files: []policy.File{{Path: "app.py", Content: []byte(src)}}})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]policy.Finding{}
	for _, f := range v.Findings {
		found[f.Rule] = f
		for _, secret := range want {
			if strings.Contains(f.Message, secret[4:]) || strings.Contains(f.Snippet, secret[4:]) {
				t.Errorf("%s leaks a secret: %+v", f.Rule, f)
			}
		}
	}
	for rule := range want {
		if _, ok := found[rule]; !ok {
			t.Errorf("%s: not found in %+v", rule, v.Findings)
		}
	}
	if !v.Deny || found["secrets.password"].Line != 5 || found["secrets.aws_access_key"].Column != 8 {
		t.Errorf("verdict %+v", v)
	}
}

func TestSecretsPlaceholdersAreNotSecrets(t *testing.T) {
	src := "password = os.environ['PASSWORD']\npassword = \"${PASSWORD}\"\napi_key = \"<your key>\"\nprint('AKIA is a prefix')\n"
	v, _ := secrets{}.Check(context.Background(), policy.Request{Files: []policy.File{{Path: "a.py", Content: []byte(src)}}})
	if len(v.Findings) != 0 {
		t.Errorf("findings %+v", v.Findings)
	}
}
