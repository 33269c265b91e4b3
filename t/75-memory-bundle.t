#!/usr/bin/perl
# Memory travels with the sessions (SPEC 19, issue 35 item 6): an export bundle carries the
# digests of the sessions it exports, as memory/<agent_id>.jsonl with each digest's owner
# (a directory bundle, a .tar.gz, a download), listed in the manifest; none of a session left
# out. `svc import` puts them into the target's memory file (its own memory.root) and points
# each restored session's memory state at it; --overwrite replaces a session's digests
# rather than adding to them; recall works there, each user recalling only their own.
# `svc memory sync` writes again the digests a memory file lost (a root restored without
# its memory).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp ();
use JSON::PP;
use SvcTest;
use SvcCliTest qw(svc);
use FakeOpenAI;

my $J = JSON::PP->new->utf8->canonical;
my $tmp = File::Temp::tempdir('svc-membundle-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my %tok = (SVC_TOKEN_ALICE => 'tok-alice', SVC_TOKEN_BOB => 'tok-bob');
my $users = "server:\n  users:\n    - {id: alice, token_env: SVC_TOKEN_ALICE, role: user}\n"
    . "    - {id: bob, token_env: SVC_TOKEN_BOB, role: user}\n";
sub as { { authorization => "Bearer tok-$_[0]" } }
sub chat {
    my ($s, $who, $sid, $text) = @_;
    return $s->req(POST => '/api/chat', headers => as($who),
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub lines_of {
    my ($f) = @_;
    my $t = SvcTest::read_file($f) // '';
    return map { $J->decode($_) } grep { length } split /\n/, $t;
}
sub by_sid { my %h; push @{ $h{ $_->{session_id} } }, $_ for @_; \%h }

# ---- the source: two users, one archived session ----
my $src = SvcTest->start(config => "${users}sessions:\n  export_default_dir: $tmp\n", env => \%tok);
is chat($src, 'alice', 'a1', 'alice likes teal')->{status}, 200, 'alice: a turn';
is chat($src, 'bob', 'b1', 'bob likes red')->{status}, 200, 'bob: a turn';
is chat($src, 'alice', 'a2', 'an archived thought')->{status}, 200, 'alice: another';
is $src->req(POST => '/api/v1/chat/sessions/a2/archive', headers => as('alice'))->{status}, 200, 'a2 archived';
my $src_mem = $src->home . '/memory/svc-agent/memory.jsonl';
is scalar(lines_of($src_mem)), 3, 'three digests in the source memory file';

# ---- export: directory bundle through the CLI ----
my $r = svc({ home => $src->home }, { SVC_HOME => $src->home }, 'export', '--out', "$tmp/out");
is $r->{rc}, 0, 'svc export: exit 0' or diag $r->{err};
my ($bundle) = $r->{out} =~ /: (\S+)\n\z/;
my @digests = lines_of("$bundle/memory/svc-agent.jsonl");
is_deeply [sort map { "$_->{session_id}:" . ($_->{owner} // '') } @digests], ['a1:alice', 'b1:bob'],
    'memory/svc-agent.jsonl: the exported sessions\' digests with their owners, not the archived one\'s';
my $manifest = $J->decode(SvcTest::read_file("$bundle/manifest.json"));
ok((grep { $_->{path} eq 'memory/svc-agent.jsonl' && $_->{sha256} =~ /^[0-9a-f]{64}$/ } @{ $manifest->{files} }),
   'listed in the manifest with its SHA-256');

# the API's download and .tar.gz carry it too, each user's export their own digests only
$r = $src->req(POST => '/api/v1/chat/sessions/export', headers => as('alice'),
               body => { download => JSON::PP::true, include_archived => JSON::PP::true });
is $r->{status}, 200, 'alice\'s download: 200';
SvcTest::write_file("$tmp/dl.tar.gz", $r->{body});
my $dl = `tar -xzOf $tmp/dl.tar.gz --wildcards '*/memory/svc-agent.jsonl'`;
is_deeply [sort map { $_->{session_id} } map { $J->decode($_) } split /\n/, $dl], ['a1', 'a2'],
    'it holds memory/svc-agent.jsonl with her digests, none of bob\'s';
my $one = $src->req(POST => '/api/v1/chat/sessions/export', headers => as('bob'), body => { format => 'tar.gz' });
is $one->{status}, 200, 'bob\'s export as .tar.gz';
my $tarl = `tar -xzOf '$one->{json}{export_file}' --wildcards '*/memory/svc-agent.jsonl'`;
is_deeply [map { $_->{session_id} } map { $J->decode($_) } split /\n/, $tarl], ['b1'], 'it carries b1\'s digest only';
$src->stop;

# ---- import into another host's root and memory.root ----
my $dst_home = SvcTest->make_home('');
my $dst = { home => $dst_home };
my $denv = { SVC_HOME => $dst_home };
$r = svc($dst, $denv, 'import', $bundle);
is $r->{rc}, 0, 'svc import: exit 0' or diag $r->{err};
my $dst_mem = "$dst_home/memory/svc-agent/memory.jsonl";
is_deeply [sort map { "$_->{session_id}:$_->{owner}" } lines_of($dst_mem)], ['a1:alice', 'b1:bob'],
    'the target\'s memory file holds their digests, owners kept';
my $state = $J->decode(SvcTest::read_file("$dst_home/agents/native_sessions/session_a1/svc_memory.json"));
is $state->{memory_file}, $dst_mem, 'a1\'s memory state points at the target\'s memory file';

# again with --overwrite: replaced, not added to
$r = svc($dst, $denv, 'import', '--overwrite', $bundle);
is $r->{rc}, 0, 'import --overwrite: exit 0';
is scalar(lines_of($dst_mem)), 2, 'still one digest a session';

# ---- recall works there, per user ----
my $fake = FakeOpenAI->start;
SvcTest::write_file("$dst_home/agents.yaml", SvcTest::with_defaults(
    "${users}model:\n  provider: openai\n  name: fake-1\n  base_url: " . $fake->base_url
    . "\n  api_key: sk-x\nmemory:\n  recall: 5\n"));
my $t = SvcTest->start(home => $dst_home, env => \%tok);
is chat($t, 'alice', 'a9', 'what do I like?')->{status}, 200, 'alice asks on the target';
my $sys = $fake->request_for('what do I like?')->{messages}[0]{content} // '';
like $sys, qr/alice likes teal/, 'her restored digest is recalled';
unlike $sys, qr/bob likes red/, 'bob\'s is not';
$t->stop;
$fake->stop;

# ---- svc memory sync writes lost digests again ----
SvcTest::write_file("$dst_home/agents.yaml", SvcTest::with_defaults($users));
unlink $dst_mem or die "unlink: $!";
$r = svc($dst, $denv, 'memory', 'sync');
is $r->{rc}, 0, 'svc memory sync (every session): exit 0' or diag $r->{err};
like $r->{out}, qr/^memory sync: 3 sessions, 0 failed$/m, 'it says how many';
my $back = by_sid(lines_of($dst_mem));
is_deeply [sort keys %$back], [qw(a1 a9 b1)], 'each session has its digest back';
is $back->{a1}[0]{owner}, 'alice', 'with its owner';
$r = svc($dst, $denv, 'memory', 'sync');
is scalar(lines_of($dst_mem)), 3, 'a second run writes nothing twice';

done_testing;
