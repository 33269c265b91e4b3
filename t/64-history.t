#!/usr/bin/perl
# Managing history (SPEC 13) through nginx, real workers and the svc tool: delete (the
# directory, index row, memory digests, stored responses and run records all go; 409 while a
# run holds the session; bad ids change nothing; a reader polling during deletions never sees
# half a session).
use strict;
use warnings;
use utf8;
use lib 't/lib';
use Test::More;
use Fcntl qw(:flock);
use POSIX ();
use File::Temp ();
use Time::HiRes qw(time sleep);
use SvcTest;
use SvcCliTest qw(svc);

my $J = $SvcTest::JSON;
my $s = SvcTest->start(workers => 2);
my $ROOT = $s->root;
my $MEM = $s->home . '/memory/svc-agent/memory.jsonl';

sub chat {
    my ($sid, $text) = @_;
    return $s->req(POST => '/api/chat', body => {
        session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub del { $s->req(DELETE => "/api/v1/chat/sessions/$_[0]") }
sub mem_sids { map { ($J->decode($_)->{session_id}) } grep { length } split /\n/, SvcTest::read_file($MEM) // '' }
sub listed {
    my ($sid) = @_;
    my $r = $s->req(GET => '/api/v1/chat/sessions?include_archived=true&limit=500');
    return scalar grep { $_->{session_id} eq $sid } @{ $r->{json}{sessions} };
}
sub root_entries { opendir(my $d, $ROOT) or return (); sort grep { !/^\.\.?$/ } readdir $d }
sub tree_sig { join "\n", map { $_ . ' ' . (-s $_ // 0) } SvcTest::files_under($ROOT) }

# ---- what a session leaves outside its directory ----
is chat('del-1', "first of del-1")->{status}, 200, 'del-1 turn 1';
is chat('del-1', "second of del-1")->{status}, 200, 'del-1 turn 2';
is chat('keep-1', "keep this one")->{status}, 200, 'keep-1 turn';
my $r = $s->req(POST => '/api/v1/responses', body => { input => 'a response', conversation => 'del-1' },
                headers => { 'idempotency-key' => 'del-key-1' });
is $r->{status}, 200, 'a stored response on del-1';
my $resp_id = $r->{json}{id};
$r = $s->req(POST => '/api/chat/runs', body => { session_id => 'del-1',
    messages => [{ role => 'user', content => 'async on del-1' }] });
is $r->{status}, 202, 'an async run on del-1';
my $run_id = $r->{json}{run_id};
is SvcTest::wait_run($s, $run_id)->{json}{status}, 'done', 'the run ended';
ok((grep { $_ eq 'del-1' } mem_sids()), 'del-1 has memory digests');
ok((grep { $_ eq 'keep-1' } mem_sids()), 'keep-1 has memory digests');
ok -f "$ROOT/.svc_responses/$resp_id.json", 'the response is stored';
ok -f "$ROOT/.svc_runs/$run_id.json", 'the run is recorded';
ok((grep { /key_/ } SvcTest::files_under("$ROOT/.svc_responses")), 'its idempotency key is stored');

# ---- bad input and refusals change nothing ----
# the async run's process may still tidy up (its sidecar's spare, the runs' pruning) just
# after its record says done: wait until the tree holds still
my $before = tree_sig();
for (1 .. 40) {
    sleep 0.25;
    my $now = tree_sig();
    last if $now eq $before;
    $before = $now;
}
$r = del('bad%20id');
is $r->{status}, 400, 'an invalid id: 400';
is $r->{json}{error}{code}, 'invalid_session_id', 'invalid_session_id';
$r = del('.hidden');
is $r->{status}, 400, 'an id starting with a dot: 400';
$r = del('nope');
is $r->{status}, 404, 'a missing session: 404';
is $r->{json}{error}{code}, 'session_not_found', 'session_not_found';
open my $lk, '>>', "$ROOT/session_del-1/.svc.run.lock" or die "lock: $!";
flock($lk, LOCK_EX) or die "flock: $!";
$r = del('del-1');
is $r->{status}, 409, 'a run holds it: 409';
is $r->{json}{error}{code}, 'session_busy', 'session_busy';
close $lk;
is tree_sig(), $before, 'refused deletions changed no file';
$r = $s->req(POST => '/api/v1/chat/sessions/del-1', body => {});
is $r->{status}, 405, 'POST on a session: 405';
like $r->{headers}{allow}, qr/DELETE/, 'Allow names DELETE';

# ---- the deletion ----
$r = del('del-1');
is $r->{status}, 200, 'DELETE: 200';
is_deeply $r->{json}, { deleted => JSON::PP::true, session_id => 'del-1' }, 'the answer';
ok !-e "$ROOT/session_del-1", 'the directory is gone';
is_deeply [grep { /svc_trash/ } root_entries()], [], 'nothing left behind in the root';
is $s->req(GET => '/api/v1/chat/sessions/del-1')->{status}, 404, 'the detail: 404';
is $s->req(GET => '/api/v1/chat/sessions/del-1/messages')->{status}, 404, 'the messages: 404';
ok !listed('del-1'), 'not listed';
ok listed('keep-1'), 'the other session is listed';
ok !(grep { $_ eq 'del-1' } mem_sids()), 'its memory digests are gone';
ok((grep { $_ eq 'keep-1' } mem_sids()), 'the other session keeps its digests');
ok !-e "$ROOT/.svc_responses/$resp_id.json", 'its stored response is gone';
is $s->req(GET => "/api/v1/responses/$resp_id")->{status}, 404, 'the response: 404';
ok !(grep { /^key_/ } map { s{.*/}{}r } SvcTest::files_under("$ROOT/.svc_responses")), 'its idempotency key is gone';
is $s->req(GET => "/api/chat/runs/$run_id")->{status}, 404, 'its run record: 404';
ok !(grep { /\Q$run_id\E/ } SvcTest::files_under("$ROOT/.svc_runs")), 'no file of its run is left';
ok SvcTest::wait_for(5, sub { $s->log =~ /session del-1 deleted/ }), 'one log line';
my @lines = grep { /session del-1 deleted/ } split /\n/, $s->log;
is scalar @lines, 1, 'exactly one';
unlike $lines[0], qr/first of del-1/, 'the log line carries no text';
is del('del-1')->{status}, 404, 'deleted again: 404';
# the id is free again: a new session under it starts empty
$r = chat('del-1', 'a new life');
like $r->{json}{content}, qr/given 0 earlier messages/, 'a new session under the same id starts empty';

# ---- the svc tool ----
my $home = { home => $s->home };
my $c = svc($home, 'sessions', 'delete', 'keep-1', 'bad/id');
is $c->{rc}, 2, 'svc sessions delete with an invalid id: exit 2';
like $c->{err}, qr/invalid_session_id/, 'it says why';
ok -d "$ROOT/session_keep-1", 'and deletes nothing';
$c = svc($home, 'sessions', 'delete', 'keep-1', 'del-1', 'nope');
is $c->{rc}, 1, 'one missing: exit 1';
like $c->{out}, qr/^deleted keep-1\ndeleted del-1\n\z/, 'the others deleted';
like $c->{err}, qr/session_not_found/, 'the missing one named';
ok !-e "$ROOT/session_keep-1" && !-e "$ROOT/session_del-1", 'both directories gone';
ok !listed('keep-1'), 'keep-1 not listed through nginx';
ok !(grep { $_ eq 'keep-1' } mem_sids()), 'keep-1 digests gone';

# ---- a memory file that cannot be rewritten fails the deletion, and nothing changes ----
{
    my $h = SvcCliTest::new_home();
    is svc($h, 'chat', 'm1', 'remember me')->{rc}, 0, 'a session with a digest';
    my $mf = "$h->{home}/memory/svc-agent/memory.jsonl";
    like SvcTest::read_file($mf), qr/"m1"/, 'its digest is in the memory file';
    rename $mf, "$mf.aside" or die;
    mkdir $mf or die;    # a directory where the file should be: it cannot be read or replaced
    my $d = svc($h, 'sessions', 'delete', 'm1');
    is $d->{rc}, 1, 'delete: exit 1';
    like $d->{err}, qr/io_error/, 'an io_error';
    ok -d "$h->{root}/session_m1", 'the session is still there';
    rmdir $mf or die;
    rename "$mf.aside", $mf or die;
    is svc($h, 'sessions', 'delete', 'm1')->{rc}, 0, 'deleted once the file is back';
    unlike SvcTest::read_file($mf), qr/"m1"/, 'and its digest with it';
}

# ---- what a deletion or a fork that died leaves: fsck names it, --repair removes it ----
{
    my $h = SvcCliTest::new_home();
    is svc($h, 'chat', 'x1', 'hello')->{rc}, 0, 'a session in a fresh root';
    for my $d ('.svc_trash-x2-0123456789abcdef', '.svc_new-fedcba9876543210', '.svc_new-recent') {
        system('mkdir', '-p', "$h->{root}/$d/session_x2/agents") == 0 or die;
        utime(time - 7200, time - 7200, "$h->{root}/$d") unless $d =~ /recent/;
    }
    my $f = svc($h, 'fsck');
    is $f->{rc}, 1, 'fsck: problems left';
    is scalar(() = $f->{out} =~ /: leftover: /g), 2, 'the two old ones named, not the recent one';
    $f = svc($h, 'fsck', '--repair');
    like $f->{out}, qr/0 left/, 'fsck --repair: nothing left' or diag $f->{out};
    ok !-e "$h->{root}/.svc_trash-x2-0123456789abcdef" && !-e "$h->{root}/.svc_new-fedcba9876543210", 'removed';
    ok -d "$h->{root}/.svc_new-recent", 'a recent one (a fork under way) kept';
}

# ---- readers during deletions never see half a session ----
# Sessions as another program writes them (no sidecar): 400 messages each.
my $N = 400;
my @big = map { "big-$_" } 1 .. 6;
for my $sid (@big) {
    my $adir = "$ROOT/session_$sid/agents/agent_svc-agent";
    system('mkdir', '-p', "$adir/messages", "$ROOT/session_$sid/multi_agents") == 0 or die;
    my $ts = '2025-03-04T05:06:07.123456+00:00';
    SvcTest::write_file("$ROOT/session_$sid/session.json", $J->encode({
        session_id => $sid, session_type => 'AGENT', created_at => $ts, updated_at => $ts }));
    SvcTest::write_file("$adir/agent.json", $J->encode({ agent_id => 'svc-agent', state => {},
        conversation_manager_state => { __name__ => 'SlidingWindowConversationManager',
            removed_message_count => 0, model_call_count => 0 }, created_at => $ts, updated_at => $ts }));
    for my $i (0 .. $N - 1) {
        my $role = $i % 2 ? 'assistant' : 'user';
        SvcTest::write_file("$adir/messages/message_$i.json", $J->encode({
            message => { role => $role, content => [{ text => "$sid message $i" }] },
            message_id => $i, redact_message => undef, created_at => $ts, updated_at => $ts }));
    }
}
for my $sid (@big) {
    is $s->req(GET => "/api/v1/chat/sessions/$sid")->{json}{message_count}, $N, "$sid whole before";
}
my $bad = "$ROOT/../half.txt";
my $pid = fork // die;
if (!$pid) {
    my @half;
    my $until = time + 30;
    my $seen_gone = 0;
    while (time < $until && $seen_gone < @big) {
        $seen_gone = 0;
        for my $sid (@big) {
            my $d = $s->req(GET => "/api/v1/chat/sessions/$sid");
            push @half, "detail $sid $d->{status} " . ($d->{json}{message_count} // '-')
                unless $d->{status} == 404 || ($d->{status} == 200 && $d->{json}{message_count} == $N);
            my $m = $s->req(GET => "/api/v1/chat/sessions/$sid/messages?limit=1&offset=" . ($N - 1));
            push @half, "messages $sid $m->{status} " . ($m->{json}{total} // '-')
                unless $m->{status} == 404 || ($m->{status} == 200 && $m->{json}{total} == $N
                    && $m->{json}{messages}[0]{content} eq "$sid message " . ($N - 1));
            $seen_gone++ if $d->{status} == 404;
        }
        my $l = $s->req(GET => '/api/v1/chat/sessions?limit=500');
        push @half, "list $l->{status}" unless $l->{status} == 200;
        for my $row (@{ $l->{json}{sessions} || [] }) {
            push @half, "list $row->{session_id} $row->{message_count}"
                if $row->{session_id} =~ /^big-/ && $row->{message_count} != $N;
        }
    }
    SvcTest::write_file($bad, join("\n", @half));
    POSIX::_exit(0);
}
sleep 0.3;
for my $sid (@big) {
    is del($sid)->{status}, 200, "$sid deleted while read";
    sleep 0.05;
}
waitpid $pid, 0;
is SvcTest::read_file($bad), '', 'no reader saw half a session';
unlink $bad;
is_deeply [grep { /^session_big|svc_trash/ } root_entries()], [], 'all gone, nothing left behind';

# ---- pin, tags, metadata (SPEC 13.3, 12.2) ----
for my $sid (qw(lab-1 lab-2 lab-3)) { is chat($sid, "about $sid")->{status}, 200, "$sid made" }
sub patch { $s->req(PATCH => "/api/v1/chat/sessions/$_[0]", body => $_[1]) }
sub ids_of { my ($q) = @_; my $r = $s->req(GET => "/api/v1/chat/sessions?limit=500$q");
             return join ',', sort map { $_->{session_id} } grep { $_->{session_id} =~ /^lab-/ } @{ $r->{json}{sessions} || [] } }
$r = patch('lab-1', { pinned => JSON::PP::true, tags => ['work', 'urgent', 'work'], metadata => { project => 'x' } });
is $r->{status}, 200, 'PATCH pinned, tags, metadata: 200';
is $r->{json}{pinned}, JSON::PP::true, 'the summary says pinned';
is_deeply $r->{json}{tags}, ['work', 'urgent'], 'tags in order, each once';
is_deeply $r->{json}{metadata}, { project => 'x' }, 'metadata';
like $r->{json}{title}, qr/about lab-1/, 'the title stays';
my $d = $s->req(GET => '/api/v1/chat/sessions/lab-1')->{json};
is_deeply [$d->{pinned}, $d->{tags}, $d->{metadata}], [JSON::PP::true, ['work', 'urgent'], { project => 'x' }], 'the detail shows them';
my $sc = $J->decode(SvcTest::read_file("$ROOT/session_lab-1/svc_session.json"));
is_deeply $sc->{tags}, ['work', 'urgent'], 'stored in the sidecar';
is patch('lab-2', { tags => ['work'] })->{status}, 200, 'lab-2 tagged';
is ids_of('&pinned=true'), 'lab-1', 'pinned=true';
is ids_of('&pinned=false'), 'lab-2,lab-3', 'pinned=false';
is ids_of('&tag=work'), 'lab-1,lab-2', 'tag=work';
is ids_of('&tag=work&tag=urgent'), 'lab-1', 'two tags: both must match';
is ids_of('&tag=urgent&pinned=false'), '', 'tag and pinned together';
is ids_of('&tag=wor'), '', 'a tag matches whole';
$r = $s->req(GET => '/api/v1/chat/sessions?pinned=maybe');
is_deeply [$r->{status}, $r->{json}{error}{code}, $r->{json}{error}{param}], [400, 'invalid_query', 'pinned'], 'pinned=maybe: 400';
$r = $s->req(GET => '/api/v1/chat/sessions?tag=');
is_deeply [$r->{status}, $r->{json}{error}{param}], [400, 'tag'], 'an empty tag: 400';
$c = svc($home, 'sessions', 'list', '--tag', 'work', '--pinned', 'false');
is $c->{rc}, 0, 'svc sessions list --tag --pinned';
is join(',', map { $_->{session_id} } @{ $J->decode($c->{out})->{sessions} }), 'lab-2', 'the same filter';

# over the limits: 422 naming the field, nothing written
my $sc_before = SvcTest::read_file("$ROOT/session_lab-1/svc_session.json");
my %many = map { ("k$_" => 'v') } 1 .. 17;
for my $case (
    [{ tags => [map { "t$_" } 1 .. 21] }, 'tags', '21 tags'],
    [{ tags => ['x' x 65] }, 'tags', 'a tag of 65 characters'],
    [{ tags => [''] }, 'tags', 'an empty tag'],
    [{ tags => ["a\nb"] }, 'tags', 'a tag with a newline'],
    [{ tags => ["a\x{0}b"] }, 'tags', 'a tag with a NUL (it was stored cut to "a")'],
    [{ tags => [7] }, 'tags', 'a tag that is a number'],
    [{ tags => 'work' }, 'tags', 'tags not an array'],
    [{ metadata => \%many }, 'metadata', '17 metadata keys'],
    [{ metadata => { 'k' x 65 => 'v' } }, 'metadata', 'a key of 65 characters'],
    [{ metadata => { big => 'v' x 513 } }, 'metadata.big', 'a value of 513 characters'],
    [{ metadata => { n => 5 } }, 'metadata.n', 'a value that is a number'],
    [{ metadata => ['x'] }, 'metadata', 'metadata not an object'],
    [{ pinned => 'yes' }, 'pinned', 'pinned not a boolean'],
    [{ pinned => JSON::PP::false, tags => ['x' x 65] }, 'tags', 'a good field with a bad one'],
    [{ title => 'T', titel => 'x' }, 'titel', 'a misspelt field beside a good one (it was ignored: 200)'],
) {
    my ($body, $param, $what) = @$case;
    $r = patch('lab-1', $body);
    is_deeply [$r->{status}, $r->{json}{error}{code}, $r->{json}{error}{param}], [422, 'invalid_field', $param], "$what: 422 $param";
}
is SvcTest::read_file("$ROOT/session_lab-1/svc_session.json"), $sc_before, 'nothing written';
$r = patch('lab-1', {});
is_deeply [$r->{status}, $r->{json}{error}{code}], [422, 'missing_field'], 'nothing to change: 422';
# at the limits, counted in characters
my %full = map { (sprintf('%s%02d', 'é' x 62, $_) => 'ü' x 512) } 1 .. 16;
$r = patch('lab-3', { tags => [map { sprintf('%s%02d', 'ß' x 62, $_) } 1 .. 20], metadata => \%full });
is $r->{status}, 200, '20 tags of 64 characters, 16 keys of 64 with values of 512: 200';
is scalar @{ $r->{json}{tags} }, 20, 'all 20 tags kept';
is ids_of('&tag=' . sprintf('%s%02d', '%C3%9F' x 62, 20)), 'lab-3', 'a long non-ASCII tag filters';
$r = patch('lab-1', { pinned => JSON::PP::false, tags => [] });
is_deeply [$r->{json}{pinned}, $r->{json}{tags}], [JSON::PP::false, []], 'unpinned, tags cleared';
is ids_of('&pinned=true'), '', 'no pinned session left';
is ids_of('&tag=work'), 'lab-2', 'lab-1 no longer tagged work';

# ---- fork (SPEC 13.3) ----
for my $i (1 .. 3) { is chat('src-1', "source turn $i")->{status}, 200, "src-1 turn $i" }
my $src_sig = join "\n", map { $_ . ' ' . (-s $_) } SvcTest::files_under("$ROOT/session_src-1");
sub fork_of { $s->req(POST => "/api/v1/chat/sessions/$_[0]/fork", body => $_[1] // {}) }
$r = fork_of('src-1');
is $r->{status}, 201, 'fork with no body fields: 201';
like $r->{json}{session_id}, qr/^sess-[0-9a-f]{16}$/, 'a new id';
is $r->{json}{message_count}, 6, 'every message by default';
is_deeply $r->{json}{forked_from}, { session_id => 'src-1', message_id => 5 }, 'forked_from the last message';
like $r->{json}{title}, qr/source turn 1/, "the source's title";
$r = fork_of('src-1', { message_id => 1, session_id => 'fork-a', title => 'Branch A' });
is $r->{status}, 201, 'fork at message 1 as fork-a: 201';
is_deeply [@{ $r->{json} }{qw(session_id message_count title status)}], ['fork-a', 2, 'Branch A', 'idle'], 'its summary';
is_deeply $r->{json}{forked_from}, { session_id => 'src-1', message_id => 1 }, 'forked_from message 1';
is_deeply $s->req(GET => '/api/v1/chat/sessions/fork-a')->{json}{forked_from}, $r->{json}{forked_from}, 'the detail shows forked_from';
my $fm = $s->req(GET => '/api/v1/chat/sessions/fork-a/messages')->{json};
my $sm = $s->req(GET => '/api/v1/chat/sessions/src-1/messages?limit=2')->{json};
is $fm->{total}, 2, 'two messages';
is_deeply [map { [$_->{role}, $_->{content}] } @{ $fm->{messages} }], [map { [$_->{role}, $_->{content}] } @{ $sm->{messages} }], 'copies of the first two';
ok listed('fork-a'), 'fork-a is listed';
like chat('fork-a', 'on the branch')->{json}{content}, qr/given 2 earlier messages/, 'a turn on the fork sees the copies';
is $s->req(GET => '/api/v1/chat/sessions/src-1')->{json}{message_count}, 6, 'the source keeps its 6';
is join("\n", map { $_ . ' ' . (-s $_) } SvcTest::files_under("$ROOT/session_src-1")), $src_sig, 'no file of the source changed';

# bad input: clear errors, nothing written
my @before_fork = root_entries();
for my $case (
    [{ message_id => 6 }, 422, 'invalid_field', 'message_id', 'past the end'],
    [{ message_id => -1 }, 422, 'invalid_field', 'message_id', 'negative'],
    [{ message_id => 'x' }, 422, 'invalid_field', 'message_id', 'not a number'],
    [{ session_id => 'fork-a' }, 409, 'session_exists', 'session_id', 'an id that exists'],
    [{ session_id => 'src-1' }, 409, 'session_exists', 'session_id', 'the source itself'],
    [{ session_id => 'bad id' }, 400, 'invalid_session_id', 'session_id', 'an invalid id'],
    [{ title => '' }, 422, 'invalid_field', 'title', 'an empty title'],
    [{ message_id => 1, sesion_id => 'fork-x' }, 422, 'invalid_field', 'sesion_id', 'a misspelt field (it was ignored: 201)'],
) {
    my ($body, $st, $code, $param, $what) = @$case;
    $r = fork_of('src-1', $body);
    is_deeply [$r->{status}, $r->{json}{error}{code}, $r->{json}{error}{param}], [$st, $code, $param], "fork $what: $st $code";
}
is fork_of('nope')->{status}, 404, 'fork of a missing session: 404';
is $s->req(POST => '/api/v1/chat/sessions/src-1/fork', body => '{')->{status}, 400, 'bad JSON: 400';
is_deeply [root_entries()], \@before_fork, 'refused forks left nothing in the root';

# a Strands-layout reader sees an ordinary session (as Strands' FileSessionManager reads it)
my $check = SvcCliTest::py(<<'PY', "$ROOT/session_fork-a", 'fork-a', 'svc-agent');
import os, sys
from strands_read import load, messages
d, sid, aid = sys.argv[1:4]
s = load(os.path.join(d, 'session.json'))
assert s['session_id'] == sid and s['session_type'] == 'AGENT', s
assert os.path.isdir(os.path.join(d, 'multi_agents'))
a = load(os.path.join(d, 'agents', 'agent_' + aid, 'agent.json'))
assert a['agent_id'] == aid and 'conversation_manager_state' in a and 'state' in a, a
out = []
for n, m in messages(d, aid):
    assert m['message_id'] == n and set(m) >= {'message', 'redact_message', 'created_at', 'updated_at'}, m
    out.append(m['message']['role'] + ':' + ''.join(b.get('text', '') for b in m['message']['content']))
print('\n'.join(out))
PY
my @turns = split /\n/, $check;
is scalar @turns, 4, 'a Strands reader finds the 4 messages (2 copied, 1 turn)';
like $turns[0], qr/^user:source turn 1$/, 'the first is the copied user message';
like $turns[2], qr/^user:on the branch$/, 'then the turn on the fork';

# ids with a gap (another program wrote them): the ids are kept, up to message_id
my $gdir = "$ROOT/session_gap-1/agents/agent_svc-agent/messages";
system('mkdir', '-p', $gdir) == 0 or die;
SvcTest::write_file("$ROOT/session_gap-1/session.json", $J->encode({ session_id => 'gap-1', session_type => 'AGENT',
    created_at => '2025-03-04T05:06:07.123456+00:00', updated_at => '2025-03-04T05:06:07.123456+00:00' }));
for my $i (0, 1, 5, 6) {
    SvcTest::write_file("$gdir/message_$i.json", $J->encode({ message => { role => $i % 2 ? 'assistant' : 'user',
        content => [{ text => "g$i" }] }, message_id => $i, redact_message => undef,
        created_at => '2025-03-04T05:06:07.123456+00:00', updated_at => '2025-03-04T05:06:07.123456+00:00' }));
}
$r = fork_of('gap-1', { message_id => 5, session_id => 'gap-f' });
is_deeply [$r->{status}, $r->{json}{message_count}], [201, 3], 'a fork of a session with a gap: 3 messages';
is join(',', map { /message_(\d+)/ ? $1 : () } sort(SvcTest::files_under("$ROOT/session_gap-f/agents/agent_svc-agent/messages"))), '0,1,5', 'ids 0, 1, 5 kept';
is fork_of('gap-1', { message_id => 7 })->{status}, 422, 'past its last id (6): 422';

# ---- feedback (SPEC 13.3) ----
is chat('fb-1', "fb question $_")->{status}, 200, "fb-1 turn $_" for 1 .. 2;
sub fb { my ($sid, $id, $body) = @_; $s->req(PUT => "/api/v1/chat/sessions/$sid/messages/$id/feedback", body => $body) }
sub rows { my $m = $s->req(GET => "/api/v1/chat/sessions/$_[0]/messages")->{json}; return { map { ($_->{message_id} => $_) } @{ $m->{messages} } } }
rows('fb-1') for 1 .. 2;    # rows cached by the workers before any feedback
$r = fb('fb-1', 1, { rating => 'up', comment => 'good answer' });
is $r->{status}, 200, 'PUT feedback: 200';
is_deeply [@{ $r->{json} }{qw(session_id message_id)}, @{ $r->{json}{feedback} }{qw(rating comment)}], ['fb-1', 1, 'up', 'good answer'], 'the answer';
like $r->{json}{feedback}{updated_at}, qr/^\d{4}-/, 'updated_at';
for (1 .. 2) {
    my $rw = rows('fb-1');
    is_deeply [@{ $rw->{1}{feedback} }{qw(rating comment)}], ['up', 'good answer'], "the messages row shows it ($_)";
    ok !exists $rw->{0}{feedback} && !exists $rw->{3}{feedback}, "other rows have none ($_)";
}
my $FB = "$ROOT/session_fb-1/svc_feedback.json";
ok -f $FB, 'stored in svc_feedback.json';
my $fb_before = SvcTest::read_file($FB);
my @fb_tree = SvcTest::files_under("$ROOT/session_fb-1");
for my $case (
    ['fb-1', 0, { rating => 'up' }, 422, 'invalid_field', 'message_id', 'a user message'],
    ['fb-1', 99, { rating => 'up' }, 404, 'not_found', undef, 'no such message'],
    ['fb-1', 'x', { rating => 'up' }, 422, 'invalid_field', 'message_id', 'not a number'],
    ['fb-1', '01', { rating => 'up' }, 422, 'invalid_field', 'message_id', 'a padded number'],
    ['fb-1', 1, { rating => 'meh' }, 422, 'invalid_field', 'rating', 'rating meh'],
    ['fb-1', 1, { rating => 5 }, 422, 'invalid_field', 'rating', 'rating a number'],
    ['fb-1', 1, { comment => 'no rating' }, 422, 'missing_field', 'rating', 'no rating'],
    ['fb-1', 1, { rating => 'up', comment => 'x' x 2001 }, 422, 'invalid_field', 'comment', 'a comment of 2001'],
    ['fb-1', 1, { rating => 'up', comment => 7 }, 422, 'invalid_field', 'comment', 'a comment that is a number'],
    ['fb-1', 1, { rating => 'up', coment => 'x' }, 422, 'invalid_field', 'coment', 'a misspelt field (it was ignored: 200)'],
    ['nope', 1, { rating => 'up' }, 404, 'session_not_found', undef, 'no such session'],
    ['bad%20id', 1, { rating => 'up' }, 400, 'invalid_session_id', 'session_id', 'a bad session id'],
) {
    my ($sid, $id, $body, $st, $code, $param, $what) = @$case;
    $r = fb($sid, $id, $body);
    is_deeply [$r->{status}, $r->{json}{error}{code}], [$st, $code], "feedback, $what: $st $code";
    is $r->{json}{error}{param}, $param, "  param" if defined $param;
}
is SvcTest::read_file($FB), $fb_before, 'refused feedback wrote nothing';
is_deeply [SvcTest::files_under("$ROOT/session_fb-1")], \@fb_tree, 'no file added';
is fb('fb-1', 3, { rating => 'down', comment => 'é' x 2000 })->{status}, 200, 'a comment of 2000 characters';
is rows('fb-1')->{3}{feedback}{rating}, 'down', 'message 3 rated down';
$r = fb('fb-1', 3, { rating => undef });
is_deeply [$r->{status}, $r->{json}{feedback}], [200, undef], 'rating null without a comment: removed';
ok !exists rows('fb-1')->{3}{feedback}, 'its row has no feedback again';
is_deeply [sort keys %{ $J->decode(SvcTest::read_file($FB))->{feedback} }], [1], 'only message 1 left in the file';

# the export: feedback.jsonl, and preference pairs only between answers to the same input
is chat('pp-1', 'pp question one')->{status}, 200, 'pp-1 turn 1';
is chat('pp-1', 'pp question two')->{status}, 200, 'pp-1 turn 2';
is fork_of('pp-1', { message_id => 1, session_id => 'pp-2' })->{status}, 201, 'pp-2 forked after the first answer';
is chat('pp-2', 'pp question two')->{status}, 200, 'pp-2: the same second question';
is fb('pp-1', 1, { rating => 'up' })->{status}, 200, 'pp-1 answer 1 up';
is fb('pp-1', 3, { rating => 'down', comment => 'worse' })->{status}, 200, 'pp-1 answer 3 down';
is fb('pp-2', 3, { rating => 'up' })->{status}, 200, 'pp-2 answer 3 up';
my $out = File::Temp::tempdir('svc-exp-XXXXXX', TMPDIR => 1, CLEANUP => 1);
$c = svc($home, 'export', '--session', 'pp-1', '--session', 'pp-2', '--session', 'fb-1', '--out', $out);
is $c->{rc}, 0, 'svc export' or diag $c->{err};
my ($bundle) = grep { -d } glob("$out/chat-export-*");
my @ratings = map { $J->decode($_) } grep { length } split /\n/, SvcTest::read_file("$bundle/feedback.jsonl");
is_deeply [sort map { "$_->{session_id}:$_->{message_id}:$_->{rating}" } @ratings],
    ['fb-1:1:up', 'pp-1:1:up', 'pp-1:3:down', 'pp-2:3:up'], 'feedback.jsonl: every rating';
my ($worse) = grep { ($_->{comment} // '') eq 'worse' } @ratings;
is "$worse->{session_id}:$worse->{message_id}", 'pp-1:3', 'with its comment';
my @pairs = map { $J->decode($_) } grep { length } split /\n/, SvcTest::read_file("$bundle/feedback_pairs.jsonl");
is scalar @pairs, 1, 'one preference pair: the two answers to the same input';
my @in = map { "$_->{role}:$_->{content}" } @{ $pairs[0]{input}{messages} };
is_deeply [@in[0, 2]], ['user:pp question one', 'user:pp question two'], 'its input: the messages before the answers';
is scalar @{ $pairs[0]{input}{messages} }, 3, 'three of them';
is $pairs[0]{preferred_output}[0]{role}, 'assistant', 'preferred_output: an assistant message';
is $pairs[0]{non_preferred_output}[0]{role}, 'assistant', 'non_preferred_output too';
is_deeply [sort keys %{ $pairs[0] }], [qw(input non_preferred_output preferred_output)], "OpenAI's preference format, nothing else";
my ($row3) = grep { $_->{session_id} eq 'pp-1' && $_->{message_id} == 3 } map { $J->decode($_) } grep { length } split /\n/, SvcTest::read_file("$bundle/messages.jsonl");
is $row3->{feedback}{rating}, 'down', 'messages.jsonl rows carry feedback';
ok -f "$bundle/native/session_pp-1/svc_feedback.json", 'the native copy holds svc_feedback.json';
my $m = $J->decode(SvcTest::read_file("$bundle/manifest.json"));
ok((grep { $_->{path} eq 'feedback.jsonl' } @{ $m->{files} }) && (grep { $_->{path} eq 'feedback_pairs.jsonl' } @{ $m->{files} }), 'both in the manifest');
$c = svc($home, 'fsck', '--session', 'fb-1');
is $c->{rc}, 0, 'fsck knows svc_feedback.json' or diag $c->{out};

done_testing;
