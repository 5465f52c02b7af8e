/* The clients file's subject= field (serve --tls-client-ca): a certificate
 * subject naming a client, with its token or instead of one ("-"), read
 * strictly; and the lookup by subject, which never matches a token. */
#include "clients.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char *parse_fails(const char *text)
{
	struct client_entry *v = NULL;
	size_t n = 0;
	char *why = NULL;
	cr_assert_lt(clients_parse(text, strlen(text), &v, &n, &why), 0, "accepted: %s", text);
	cr_assert_null(v);
	return why;
}

Test(clients_tls, a_subject_names_a_client_with_or_instead_of_its_token)
{
	const char *text = "ci " DIGEST " code:run subject=CN=ci,O=Example approval=required\n"
			   "worker-1 - code:run subject=CN=worker-1,O=Example\n"
			   "plain " DIGEST "0" " code:run\n";
	struct client_entry *v = NULL;
	size_t n = 0;
	char *why = NULL;
	/* the third digest is one digit long: refused, the file is not half read */
	cr_assert_lt(clients_parse(text, strlen(text), &v, &n, &why), 0);
	cr_expect(strstr(why, "line 3: the second field must be") != NULL, "%s", why);
	free(why);
	why = NULL;
	text = "ci " DIGEST " code:run subject=CN=ci,O=Example approval=required\n"
	       "worker-1 - code:run subject=CN=worker-1,O=Example\n";
	cr_assert_eq(clients_parse(text, strlen(text), &v, &n, &why), 0, "%s", why);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(v[0].subject, "CN=ci,O=Example");
	cr_expect_eq(v[0].approval, CLIENT_APPROVAL_REQUIRED);
	cr_expect(!v[0].no_token);
	cr_expect_str_eq(v[1].subject, "CN=worker-1,O=Example");
	cr_expect(v[1].no_token);
	free(v);
}

Test(clients_tls, a_bad_subject_line_is_refused_naming_the_line)
{
	static const struct {
		const char *line2, *says;
	} cases[] = {
		{"b - code:run\n", "a client without a token (DIGEST \"-\") needs a subject=DN"},
		{"b - code:run approval=none\n", "needs a subject=DN"},
		{"b " DIGEST " code:run subject=\n", "subject= needs a certificate subject of 1 to 255 bytes"},
		{"b " DIGEST " code:run subject=CN=b subject=CN=c\n", "subject= is given twice"},
		{"b " DIGEST " code:run subject=CN=b\x01\n", "control character"},
		{"b - code:run subject=CN=a,O=Example\n", "has the same subject as \"a\" on line 1"},
		{"b -- code:run subject=CN=b\n", "the second field must be"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512];
		snprintf(text, sizeof text, "a - operator subject=CN=a,O=Example\n%s", cases[i].line2);
		char *why = parse_fails(text);
		cr_expect(strstr(why, "line 2: ") != NULL, "case %zu: %s", i, why);
		cr_expect(strstr(why, cases[i].says) != NULL, "case %zu: %s", i, why);
		free(why);
	}
	char long_subject[400];
	memset(long_subject, 'x', sizeof long_subject - 1);
	long_subject[sizeof long_subject - 1] = '\0';
	char text[600];
	snprintf(text, sizeof text, "b - code:run subject=CN=%s\n", long_subject);
	char *why = parse_fails(text);
	cr_expect(strstr(why, "1 to 255 bytes") != NULL, "%s", why);
	free(why);
}

Test(clients_tls, the_lookup_by_subject_is_exact_and_a_certificate_only_client_has_no_token)
{
	char path[] = "/tmp/bh-clients-tls-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	const char *text = "worker-1 - code:run subject=CN=worker-1,O=Example\n";
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct clients *c = NULL;
	char *why = NULL;
	cr_assert_eq(clients_load(path, &c, &why), 0, "%s", why);
	struct client_principal who;
	cr_assert_eq(clients_by_subject(c, "CN=worker-1,O=Example", &who), 0);
	cr_expect_str_eq(who.name, "worker-1");
	cr_expect_eq(who.scopes, CLIENT_SCOPE_CODE_RUN);
	cr_expect_eq(clients_by_subject(c, "cn=worker-1,o=example", &who), -1, "case matters");
	cr_expect_eq(clients_by_subject(c, "CN=worker-1", &who), -1);
	cr_expect_eq(clients_by_subject(c, "", &who), -1);
	/* Its digest is all zeros in memory: no token hashes to a match. */
	cr_expect_eq(clients_authenticate(c, "-", 1, &who), -1);
	char tok[CLIENTS_TOKEN_LEN + 1];
	cr_assert_eq(clients_token_new(tok, &why), 0);
	cr_expect_eq(clients_authenticate(c, tok, strlen(tok), &who), -1);
	clients_free(c);
	unlink(path);
}
