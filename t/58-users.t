#!/usr/bin/perl
# Users (SPEC 14): two users and an admin by token through nginx, over every endpoint, both
# directions. Another user's session, run or response is answered exactly as a missing one
# (same status, code and message), including ids taken from the other user's answers; a
# turn naming it never continues it. Admins see everything; /api/config, /api/jobs and
# /api/metrics are theirs. Memory recall reaches a real HTTP model server (FakeOpenAI,
# which records what it is sent) with the same user's digests only. Tokens are never in a
# response or a log. Then server.user_param behind nginx's auth_basic (REMOTE_USER).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Digest::SHA qw(sha256_hex);
use MIME::Base64 qw(encode_base64);
use File::Temp ();
use SvcTest;
use SvcCliTest qw(svc test_hooks_built);
use FakeOpenAI;

my %TOK = (alice => 'tok-alice-Secr3t-0001', bob => 'tok-bob-Secr3t-0002',
           root => 'tok-root-Secr3t-0003', legacy => 'tok-legacy-Secr3t-0004');
my $bob_sha = sha256_hex($TOK{bob});
my $fake = FakeOpenAI->start;
my $base = $fake->base_url;
my $s = SvcTest->start(
    env => { TOK_ALICE => $TOK{alice}, TOK_ROOT => $TOK{root}, LEGACY_TOK => $TOK{legacy} },
    config => <<"YAML");
server:
  api_token_env: LEGACY_TOK
  users:
    - {id: alice, token_env: TOK_ALICE}
    - {id: bob, token_sha256: "$bob_sha", role: user}
    - {id: root, token_env: TOK_ROOT, role: admin}
model:
  provider: openai
  base_url: $base
memory:
  recall: 50
jobs:
  - id: alices
    schedule: "* * * * *"
    session_id: job-alice
    input: "job for alice"
    user: alice
YAML

my @seen;
sub as {
    my ($who, $m, $p, %o) = @_;
    $o{headers} = { %{ $o{headers} || {} }, authorization => "Bearer $TOK{$who}" };
    my $r = $s->req($m, $p, %o);
    push @seen, $r;
    return $r;
}
sub chat {
    my ($who, $sid, $text, %h) = @_;
    return as($who, POST => '/api/chat', headers => \%h,
              body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub err_of { my ($r, $id) = @_; my $m = $r->{json}{error}{message} // ''; $m =~ s/\Q$id\E/ID/g if defined $id; "$r->{status} " . ($r->{json}{error}{code} // '') . " $m" }

# ---- who may ask what ----
is $s->req(GET => '/api/v1/chat/sessions', headers => { authorization => 'Bearer nope' })->{json}{error}{code},
   'invalid_token', 'an unknown token: 401 invalid_token';
for my $who (qw(alice bob)) {
    for my $p ('/api/config', '/api/jobs', '/api/metrics') {
        my $r = as($who, GET => $p);
        is "$r->{status} $r->{json}{error}{code} $r->{json}{error}{type}",
           '403 permission_denied permission_error', "$who: GET $p is for admins";
    }
    for my $p ('/api/health', '/api/extensions', '/api/v1/models') {
        is as($who, GET => $p)->{status}, 200, "$who: GET $p answers every user";
    }
}
for my $who (qw(root legacy)) {
    is as($who, GET => $_)->{status}, 200, "$who (admin): GET $_" for '/api/config', '/api/jobs', '/api/metrics';
}
for my $who (qw(alice bob root legacy)) {
    my $me = as($who, GET => '/api/me');
    my $want = $who eq 'legacy' ? 'null' : $who;
    is join(' ', $me->{status}, $me->{json}{user_id} // 'null', $me->{json}{admin} ? 'admin' : 'user', $me->{json}{users} ? 'users' : ''),
       "200 $want " . ($who =~ /root|legacy/ ? 'admin' : 'user') . ' users', "$who: GET /api/me says who asks";
}
is $s->req(GET => '/api/me')->{status}, 401, 'GET /api/me needs a token';
my $cfg = as(root => GET => '/api/config')->{json};
is_deeply [map { $_->{id} } @{ $cfg->{server}{users} }], [qw(alice bob root)], 'config lists the users';
is $cfg->{server}{users}[1]{token_sha256}, '***', 'a token digest shows as ***';

# ---- each user's sessions, runs and responses ----
my %own;    # who => {sid => 1}
for my $who (qw(alice bob)) {
    my $word = $who eq 'alice' ? 'pineapple' : 'mango';
    my $r = chat($who, "$who-1", "$who likes $word", 'Idempotency-Key' => "key-$who");
    is $r->{status}, 200, "$who: first turn";
    $own{$who}{sid} = $r->{json}{session_id};
    $own{$who}{run} = $r->{json}{run_id};
    $r = chat($who, undef, "$who asks again");    # a session id the service chose
    $own{$who}{sid2} = $r->{json}{session_id};
    $r = as($who, POST => '/api/chat/runs',
            body => { session_id => "$who-run", messages => [{ role => 'user', content => "$who runs" }] });
    is $r->{status}, 202, "$who: an asynchronous run";
    $own{$who}{arun} = $r->{json}{run_id};
    SvcTest::wait_for(15, sub { (as($who, GET => "/api/chat/runs/$own{$who}{arun}")->{json}{status} // 'running') ne 'running' });
    $r = as($who, POST => '/api/v1/responses', headers => { 'Idempotency-Key' => 'same-key' },
            body => { input => "$who responds" });
    is $r->{status}, 200, "$who: a response";
    $own{$who}{resp} = $r->{json}{id};
    $own{$who}{resp_sid} = $r->{json}{conversation}{id} // $r->{json}{session_id};
}
my $legacy = chat(legacy => 'legacy-1', 'the admin likes kiwi');
is $legacy->{status}, 200, 'the server.api_token admin still works';

sub sids_of { my ($r) = @_; [sort map { $_->{session_id} } @{ $r->{json}{sessions} || [] }] }
for my $who (qw(alice bob)) {
    my $l = sids_of(as($who, GET => '/api/v1/chat/sessions?limit=500'));
    ok @$l >= 3, "$who lists their sessions";
    is scalar(grep { !/^\Q$who\E-/ && $_ ne $own{$who}{sid2} && $_ ne $own{$who}{resp_sid} } @$l), 0,
       "$who lists only their own sessions (@$l)";
    my $other = $who eq 'alice' ? 'bob' : 'alice';
    my $l2 = sids_of(as($who, GET => "/api/v1/chat/sessions?user=$other"));
    is_deeply $l2, $l, "$who: ?user=$other does not widen the list";
}
my $all = sids_of(as(root => GET => '/api/v1/chat/sessions?limit=500'));
ok +(grep { $_ eq 'alice-1' } @$all) && (grep { $_ eq 'bob-1' } @$all) && (grep { $_ eq 'legacy-1' } @$all),
   'an admin lists every session';
is_deeply sids_of(as(root => GET => '/api/v1/chat/sessions?user=alice&limit=500')),
          sids_of(as(alice => GET => '/api/v1/chat/sessions?limit=500')), 'an admin filters by ?user=';
is_deeply sids_of(as(legacy => GET => '/api/v1/chat/sessions?limit=500')), $all, 'server.api_token sees every session';

# ---- every endpoint, both directions: another's is exactly a missing one ----
my $missing_run = 'run-00000000deadbeef';
my $missing_resp = 'resp_' . ('0' x 32);
for my $pair ([qw(alice bob)], [qw(bob alice)]) {
    my ($owner, $other) = @$pair;
    my %o = %{ $own{$owner} };
    for my $sid ($o{sid}, $o{sid2}, $o{resp_sid}, "$owner-run", 'legacy-1') {
        my $gone = 'no-such-' . length($sid);
        for my $e (['GET', '/api/v1/chat/sessions/%s'], ['GET', '/api/v1/chat/sessions/%s/messages'],
                   ['GET', '/api/chat/sessions/%s/tokens'], ['POST', '/api/v1/chat/sessions/%s/archive'],
                   ['POST', '/api/v1/chat/sessions/%s/unarchive'],
                   ['PATCH', '/api/v1/chat/sessions/%s', { title => 'stolen' }],
                   ['POST', '/api/v1/chat/sessions/export', { session_ids => ['%s'] }],
                   ['POST', '/api/v1/chat/sessions/export', { session_id => '%s', download => JSON::PP::true }]) {
            my ($m, $p, $b) = @$e;
            my $fill = sub { my ($v, $id) = @_; (my $t = $v) =~ s/%s/$id/g; $t };
            my $mk = sub {
                my $id = shift;
                my %a;
                $a{body} = { map { my $v = $b->{$_};
                                   $_ => ref $v eq 'ARRAY' ? [map { $fill->($_, $id) } @$v]
                                       : ref $v ? $v : $fill->($v, $id) } keys %$b } if $b;
                return ($fill->($p, $id), %a);
            };
            my $r = as($other, $m, $mk->($sid));
            my $x = as($other, $m, $mk->($gone));
            is $r->{status}, 404, "$other: $m $p on ${owner}'s $sid: 404";
            is err_of($r, $sid), err_of($x, $gone), "$other: $m $p: exactly as a missing session";
        }
        # a turn naming it is refused the same way and never continues it
        my $before = as(root => GET => "/api/v1/chat/sessions/$sid")->{json};
        for my $t (['/api/chat', { session_id => $sid, messages => [{ role => 'user', content => 'hijack' }] }],
                   ['/api/chat/runs', { session_id => $sid, messages => [{ role => 'user', content => 'hijack' }] }],
                   ['/api/v1/responses', { conversation => $sid, input => 'hijack' }]) {
            my $r = as($other, POST => $t->[0], body => $t->[1]);
            is err_of($r, $sid), '404 session_not_found session ID not found', "$other: POST $t->[0] naming ${owner}'s $sid";
        }
        my $after = as(root => GET => "/api/v1/chat/sessions/$sid")->{json};
        is "$after->{message_count} $after->{title} $after->{archived} $after->{updated_at}",
           "$before->{message_count} $before->{title} $before->{archived} $before->{updated_at}",
           "${owner}'s $sid is untouched";
    }
    # runs (ids taken from the owner's answers)
    for my $run ($o{run}, $o{arun}) {
        for my $e (['GET', "/api/chat/runs/%s"], ['GET', "/api/chat/runs/%s/events"], ['POST', "/api/chat/runs/%s/cancel"]) {
            my $r = as($other, $e->[0], sprintf($e->[1], $run));
            my $x = as($other, $e->[0], sprintf($e->[1], $missing_run));
            is $r->{status}, 404, "$other: $e->[0] $e->[1] on ${owner}'s run: 404";
            is err_of($r, $run), err_of($x, $missing_run), "$other: $e->[1]: exactly as a missing run";
        }
        is as($owner, GET => "/api/chat/runs/$run")->{status}, 200, "$owner reads their own run";
    }
    # responses
    my $r = as($other, GET => "/api/v1/responses/$o{resp}");
    is err_of($r, $o{resp}), err_of(as($other, GET => "/api/v1/responses/$missing_resp"), $missing_resp),
       "$other: ${owner}'s response is missing to them";
    $r = as($other, POST => '/api/v1/responses', body => { previous_response_id => $o{resp}, input => 'x' });
    is err_of($r, $o{resp}),
       err_of(as($other, POST => '/api/v1/responses', body => { previous_response_id => $missing_resp, input => 'x' }), $missing_resp),
       "$other: previous_response_id of ${owner}'s response is missing to them";
    # idempotent replays
    $r = chat($other, $o{sid}, "$owner likes anything", 'Idempotency-Key' => "key-$owner");
    is err_of($r, $o{sid}), '404 session_not_found session ID not found', "$other: ${owner}'s Idempotency-Key is not replayed";
    ok !$r->{headers}{'idempotent-replayed'}, 'no replay header';
    $r = as($other, POST => '/api/v1/responses', headers => { 'Idempotency-Key' => 'same-key' },
            body => { input => "$other again" });
    isnt $r->{json}{id}, $o{resp}, "$other: the same Responses Idempotency-Key is their own";
    # export of everything: only one's own sessions
    my $tar = as($other, POST => '/api/v1/chat/sessions/export', body => { download => JSON::PP::true });
    is $tar->{status}, 200, "$other: a download of all their sessions";
    my $tmp = File::Temp->new(SUFFIX => '.tar.gz');
    print $tmp $tar->{body};
    close $tmp;
    my @names = grep { m{/session_[^/]+/$} || m{session_[^/]+/session\.json$} } split /\n/, `tar -tzf $tmp 2>/dev/null`;
    ok @names, "$other: the bundle holds sessions";
    ok !(grep { /session_\Q$o{sid}\E\/|session_legacy-1\// } @names), "$other: the bundle holds none of ${owner}'s or the admins'";
}

# a run in flight: its session is missing to another user, never busy
my $slow = as(alice => POST => '/api/chat/runs',
              body => { session_id => 'alice-slow', messages => [{ role => 'user', content => 'slow 3 alice waits' }] });
is $slow->{status}, 202, 'alice: a slow run';
my $busy = chat(alice => 'alice-slow', 'alice again');
is $busy->{json}{error}{code}, 'session_busy', 'alice: her own running session is busy';
is err_of(chat(bob => 'alice-slow', 'bob barges in'), 'alice-slow'), '404 session_not_found session ID not found',
   'bob: alice\'s running session is missing, not busy';
is err_of(as(bob => POST => "/api/chat/runs/$slow->{json}{run_id}/cancel"), $slow->{json}{run_id}),
   err_of(as(bob => POST => "/api/chat/runs/$missing_run/cancel"), $missing_run), 'bob cannot cancel it';
SvcTest::wait_for(15, sub { (as(alice => GET => "/api/chat/runs/$slow->{json}{run_id}")->{json}{status} // 'running') ne 'running' });
is as(alice => GET => "/api/chat/runs/$slow->{json}{run_id}")->{json}{status}, 'done', 'alice\'s run went on';

# admins see and change everything
for my $who (qw(root legacy)) {
    is as($who, GET => "/api/v1/chat/sessions/$own{alice}{sid}")->{status}, 200, "$who reads alice's session";
    is as($who, GET => "/api/chat/runs/$own{bob}{arun}")->{status}, 200, "$who reads bob's run";
    is as($who, GET => "/api/v1/responses/$own{alice}{resp}")->{status}, 200, "$who reads alice's response";
}
is as(root => PATCH => "/api/v1/chat/sessions/$own{bob}{sid}", body => { title => 'by root' })->{status}, 200,
   'an admin renames a user\'s session';
my $d = as(bob => GET => "/api/v1/chat/sessions/$own{bob}{sid}")->{json};
is "$d->{title} $d->{user_id} " . ($d->{user_verified} ? 1 : 0), 'by root bob 1', 'the session stays bob\'s';
is chat(root => $own{alice}{sid}, 'root continues')->{status}, 200, 'an admin continues a user\'s session';
is as(alice => GET => "/api/v1/chat/sessions/$own{alice}{sid}")->{json}{user_id}, 'alice', '...which stays alice\'s';

# ---- full-text search: a user finds only their own sessions' words ----
is chat(bob => 'bob-secret', 'the zanzibarquokka plan')->{status}, 200, 'bob says a rare word';
is chat(alice => 'alice-own', 'my zanzibarquokka notes')->{status}, 200, 'alice says it too';
for my $who (qw(alice bob)) {
    my $r = as($who, GET => '/api/v1/chat/sessions/search?q=zanzibarquokka&limit=50');
    is $r->{status}, 200, "$who searches";
    my %sids = map { $_->{session_id} => 1 } @{ $r->{json}{results} || [] };
    my $other = $who eq 'alice' ? 'bob-secret' : 'alice-own';
    ok !$sids{$other}, "$who does not find the other user's session";
    ok $sids{$who eq 'alice' ? 'alice-own' : 'bob-secret'}, "$who finds their own";
}
my $rs = as(root => GET => '/api/v1/chat/sessions/search?q=zanzibarquokka&limit=50');
my %both = map { $_->{session_id} => 1 } grep { $_->{session_id} =~ /^(bob-secret|alice-own)$/ }
    @{ $rs->{json}{results} || [] };
is scalar(keys %both), 2, 'an admin finds both';
# alice's session holds two matches (her words and the echo); bob's two are not there for her
$rs = as(alice => GET => '/api/v1/chat/sessions/search?q=zanzibarquokka&limit=2');
is scalar(@{ $rs->{json}{results} || [] }), 2, 'alice gets her two matches';
is $rs->{json}{next_cursor}, undef, '...and no next page: bob\'s matches are not counted';

# ---- memory recall: the model is sent the same user's digests only ----
for my $who (qw(alice bob legacy)) {
    my $text = "$who recalls";
    is chat($who, "$who-recall", $text)->{status}, 200, "$who: a turn with recall";
    my $body = $fake->request_for($text) || {};
    my $sys = join "\n", map { ref $_->{content} ? '' : $_->{content} } grep { $_->{role} eq 'system' } @{ $body->{messages} || [] };
    my %want = (alice => 'pineapple', bob => 'mango', legacy => 'kiwi');
    like $sys, qr/\Q$want{$who}\E/, "$who: their own digest is recalled";
    for my $o (grep { $_ ne $who } keys %want) {
        unlike $sys, qr/\Q$want{$o}\E/, "$who: ${o}'s digest never reaches their model call";
    }
}
my $sent = join "\n", map { JSON::PP->new->canonical->encode($_) } @{ $fake->requests };
unlike $sent, qr/\Q$_\E/, 'no token reaches the model server' for values %TOK;

# ---- jobs run as the user they name; the CLI is an admin and filters by --user ----
SKIP: {
    skip 'SVC_TEST_JOBS_NOW needs a test build', 4 unless test_hooks_built() && SvcTest::test_hooks_built();
    my $h = { home => $s->home };
    my $j = svc($h, { SVC_TEST_JOBS_NOW => '2026-11-23T03:00:40Z' }, 'jobs', 'run-due');
    is $j->{rc}, 0, 'svc jobs run-due' or diag $j->{err};
    is as(alice => GET => '/api/v1/chat/sessions/job-alice')->{json}{user_id}, 'alice', "the job's session is alice's";
    is as(bob => GET => '/api/v1/chat/sessions/job-alice')->{status}, 404, '...and missing to bob';
    my $l = svc($h, 'sessions', 'list', '--user', 'bob', '--limit', '500');
    my @ids = sort map { $_->{session_id} } @{ (eval { $SvcTest::JSON->decode($l->{out}) } || {})->{sessions} || [] };
    is_deeply \@ids, sids_of(as(bob => GET => '/api/v1/chat/sessions?limit=500')), 'svc sessions list --user bob';
}

# ---- tokens never in a response or a log ----
for my $t (values %TOK, $bob_sha) {
    ok !(grep { ($_->{body} // '') =~ /\Q$t\E/ } @seen), 'a token is never in a response body';
    ok !(grep { my $h = $_->{headers}; grep { /\Q$t\E/ } map { ref $_ ? @$_ : $_ } values %$h } @seen),
       'a token is never in a response header';
}
$s->stop;
my $log = $s->log;
unlike $log, qr/\Q$_\E/, 'a token is never in the log' for values %TOK, $bob_sha;
$fake->stop;

# ---- server.user_param: the web server authenticates (nginx auth_basic, REMOTE_USER) ----
my $dir = File::Temp::tempdir('svc-users-XXXXXX', TMPDIR => 1, CLEANUP => 1);
SvcTest::write_file("$dir/htpasswd", "dave:{PLAIN}dave-pw\ncarol:{PLAIN}carol-pw\nerin:{PLAIN}erin-pw\n");
# docs/OPS.md's example: every route behind the password, but the health probe
SvcTest::write_file("$dir/auth.conf", <<"CONF");
set \$svc_realm "svc";
if (\$uri = /api/health) { set \$svc_realm off; }
auth_basic \$svc_realm;
auth_basic_user_file $dir/htpasswd;
CONF
my $p = SvcTest->start(env => { SVC_SERVE_SERVER_CONF => "$dir/auth.conf" },
                       config => "server:\n  user_param: REMOTE_USER\n  admins: [carol]\n");
sub basic {
    my ($who, $m, $path, %o) = @_;
    $o{headers} = { authorization => 'Basic ' . encode_base64("$who:$who-pw", '') };
    return $p->req($m, $path, %o);
}
is $p->req(GET => '/api/v1/chat/sessions')->{status}, 401, 'no credentials: nginx refuses';
my $r = basic(dave => POST => '/api/chat', body => { session_id => 'dave-1', messages => [{ role => 'user', content => 'hi' }] });
is $r->{status}, 200, 'dave (basic auth) chats';
is basic(dave => GET => '/api/v1/chat/sessions/dave-1')->{json}{user_id}, 'dave', 'the session is dave\'s';
is err_of(basic(erin => GET => '/api/v1/chat/sessions/dave-1'), 'dave-1'),
   err_of(basic(erin => GET => '/api/v1/chat/sessions/nope-1'), 'nope-1'), 'erin: dave\'s session is missing';
is_deeply sids_of(basic(erin => GET => '/api/v1/chat/sessions')), [], 'erin lists nothing';
is basic(carol => GET => '/api/v1/chat/sessions/dave-1')->{status}, 200, 'carol (server.admins) sees it';
is basic(dave => GET => '/api/config')->{status}, 403, 'dave: /api/config is for admins';
is basic(carol => GET => '/api/config')->{status}, 200, 'carol: /api/config';
$p->stop;

# sessions disabled: a user's turn naming a session id still runs, statelessly
my $q = SvcTest->start(env => { TOK_ALICE => $TOK{alice} },
                       config => "server:\n  users:\n    - {id: alice, token_env: TOK_ALICE}\nsessions:\n  enabled: false\n");
$r = $q->req(POST => '/api/chat', headers => { authorization => "Bearer $TOK{alice}" },
             body => { session_id => 's-1', messages => [{ role => 'user', content => 'hi' }] });
is $r->{status}, 200, 'sessions disabled: a user\'s turn naming a session runs statelessly';
$q->stop;

done_testing;
