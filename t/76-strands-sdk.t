#!/usr/bin/perl
# SPEC 17 with the real Strands Agents SDK on svc's root (t/lib/StrandsSDK.pm; skipped
# without STRANDS_SRC): Strands and svc take turns on the same sessions, svc's model being
# an `openai` provider (t/lib/FakeOpenAI.pm, which logs what reached it) and Strands' a
# scripted model that logs what reached it.
#   - summaries: Strands' summary reaches svc's model first; svc's window on a summarized
#     session summarises again (never slides past the summary); Strands restores svc's
#     summary; a session svc made with agent.conversation_manager: summarizing is one
#     Strands' SummarizingConversationManager continues;
#   - images and documents both ways (Strands' bytes to svc's model as parts, svc's parts to
#     Strands' model as bytes);
#   - interrupts: one declined and one answered through svc stay closed (Strands runs
#     nothing again, one result per call), Strands' own resume still works;
#   - numbers: big integers and floats keep their text in agent.json, tool inputs, the
#     API, the model request and the export;
#   - multi-agent state (a Swarm and a Graph) shown read-only in the detail and kept byte
#     for byte through a turn, fork, export, import and delete;
#   - svc fsck is clean after every step.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use MIME::Base64 qw(encode_base64 decode_base64);
use File::Temp qw(tempdir);
use SvcTest;
use SvcCliTest ();
use FakeOpenAI;
use StrandsSDK;

StrandsSDK::require_sdk();
delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';
my $J = $SvcTest::JSON;

my $fake = FakeOpenAI->start;
my $s = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
    . $fake->base_url . "\n  api_key: k\nagent:\n  window_size: 8\n  conversation_manager: summarizing\n"
    . "  summary_ratio: 0.5\n  preserve_recent_messages: 2\n");
my $root = $s->root;
my $sdk = StrandsSDK->new($root);
my $cli = { home => $s->home };

sub adir { "$root/session_$_[0]/agents/agent_svc-agent" }
sub agent_json { $J->decode(SvcTest::read_file(adir($_[0]) . '/agent.json')) }
sub message { $J->decode(SvcTest::read_file(adir($_[0]) . "/messages/message_$_[1].json"))->{message} }
sub ids { opendir my $d, adir($_[0]) . '/messages'; sort { $a <=> $b } map { /^message_(\d+)\.json$/ ? $1 : () } readdir $d }
sub chat {
    my ($sid, $content, @before) = @_;
    my $r = $s->req(POST => '/api/v1/chat/completions', body => { session_id => $sid,
        messages => [@before, { role => 'user', content => $content }] });
    is $r->{status}, 200, "svc turn on $sid: 200" or diag $r->{body};
    return $r;
}
sub last_model_request { my @r = grep { ref $_->{body}{messages} } @{ $fake->requests }; $r[-1]{body} }
sub fsck_clean {
    my ($what) = @_;
    my $r = SvcCliTest::svc($cli, 'fsck', '--json');
    is $r->{rc}, 0, "svc fsck clean $what" or diag $r->{out}, $r->{err};
}
sub text_of { join '', map { $_->{text} // '' } @{ $_[0]{content} // [] } }

# ---- summaries ----
{
    my $sid = 'sum';
    $sdk->turn($sid, "strands turn $_", '--summarizing', '--max', 6, '--preserve', 2) for 1 .. 4;
    my $cm = agent_json($sid)->{conversation_manager_state};
    is $cm->{__name__}, 'SummarizingConversationManager', 'Strands wrote its summarizing state';
    like text_of($cm->{summary_message}), qr/^SUMMARY of \d+ messages/, 'with a summary';
    my $removed = $cm->{removed_message_count};
    ok $removed > 0, "removed_message_count $removed";
    fsck_clean('after Strands summarised');

    $fake->clear;
    chat($sid, 'svc turn 1');
    my $req = last_model_request();
    my @msgs = grep { $_->{role} ne 'system' } @{ $req->{messages} };
    is $msgs[0]{content}, text_of($cm->{summary_message}), "Strands' summary reaches svc's model first";
    my @files = ids($sid);
    is scalar(@msgs), 1 + (@files - 1 - $removed), '... then the messages after removed_message_count';
    is $msgs[1]{content}, text_of(message($sid, $removed)), '... from removed_message_count on';

    # svc's window (8) overflows: it summarises again, never sliding past the summary
    $fake->clear;
    chat($sid, "svc turn $_") for 2 .. 4;
    my @sum_reqs = grep { ($_->{body}{messages}[0]{content} // '') =~ /^You are a conversation summarizer/ }
        @{ $fake->requests };
    my $sum_req = $sum_reqs[0];
    ok $sum_req, 'svc asked its model for a summary, with Strands\' summarization prompt';
    my $cm2 = agent_json($sid)->{conversation_manager_state};
    is $cm2->{__name__}, 'SummarizingConversationManager', 'the state is still Strands\' summarizing one';
    ok !exists $cm2->{model_call_count}, '... with no key Strands does not write';
    ok $cm2->{removed_message_count} > $removed, 'removed_message_count moved';
    like text_of($cm2->{summary_message}), qr/^You said: Please summarize this conversation/,
        'the new summary is svc\'s model\'s';
    # the summary covers every message removed: the old summary, then each stored message
    # from the old removed_message_count up to the new one, none skipped
    my @in = grep { $_->{role} ne 'system' } @{ $sum_req->{body}{messages} };
    is $in[0]{content}, text_of($cm->{summary_message}), 'the summary request starts with the old summary';
    is $in[1]{content}, text_of(message($sid, $removed)), '... then the first message it did not cover';
    # each summary takes the one before and the stored messages after it: together they
    # cover every message up to the new removed_message_count, none skipped
    my $covered = 0;
    $covered += scalar(grep { $_->{role} ne 'system' } @{ $_->{body}{messages} }) - 2 for @sum_reqs;
    is $removed + $covered, $cm2->{removed_message_count}, 'removed_message_count = what the summaries took';
    fsck_clean('after svc summarised');

    # Strands restores svc's summary
    my $before = @{ $sdk->calls };
    my $r = $sdk->turn($sid, 'strands again', '--summarizing', '--max', 6, '--preserve', 2);
    is $r->{stop_reason}, 'end_turn', 'Strands continues the session svc summarised';
    my $calls = $sdk->calls;
    is text_of($calls->[$before]{messages}[0]), text_of($cm2->{summary_message}),
        '... its model gets svc\'s summary first';
    fsck_clean('after Strands continued');

    # a session svc made (agent.conversation_manager: summarizing) is one Strands continues
    chat('svcmade', 'made by svc');
    is agent_json('svcmade')->{conversation_manager_state}{__name__}, 'SummarizingConversationManager',
        'svc names the configured manager as Strands does';
    $r = $sdk->turn('svcmade', 'strands on it', '--summarizing');
    is $r->{stop_reason}, 'end_turn', 'Strands\' SummarizingConversationManager restores it';
    fsck_clean('on the session svc made');
}

# ---- images and documents both ways ----
{
    my $sid = 'media';
    my $dir = tempdir(CLEANUP => 1);
    my $png = decode_base64('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mNgAAIAAAUAAen63NgAAAAASUVORK5CYII=');
    SvcTest::write_file("$dir/p.png", $png);
    SvcTest::write_file("$dir/notes.txt", "some notes\n");
    my $r = $sdk->turn($sid, 'look at these', '--image', "$dir/p.png", '--document', "$dir/notes.txt");
    is $r->{stop_reason}, 'end_turn', 'Strands took an image and a document';
    $fake->clear;
    chat($sid, 'and svc?');
    my ($user) = grep { ref $_->{content} } @{ last_model_request()->{messages} };
    is_deeply $user->{content}, [
        { type => 'text', text => 'look at these' },
        { type => 'image_url', image_url => { url => 'data:image/png;base64,' . encode_base64($png, '') } },
        { type => 'file', file => { filename => 'notes.txt',
                                    file_data => 'data:text/plain;base64,' . encode_base64("some notes\n", '') } },
    ], "Strands' image and document reach svc's model as OpenAI parts";
    my $p = $s->req(GET => "/api/v1/chat/sessions/$sid/messages")->{json}{messages}[0]{parts};
    is_deeply [map { $_->{type} } @$p], [qw(text image document)], 'the session API shows the parts';
    chat($sid, [{ type => 'text', text => 'from svc' },
                { type => 'image_url', image_url => { url => 'data:image/png;base64,' . encode_base64($png, '') } }]);
    $r = $sdk->turn($sid, 'what did svc send?');
    my @seen = map { @{ $_->{content} } } @{ $sdk->calls->[-1]{messages} };
    my ($img) = grep { $_->{image} } @seen[3 .. $#seen];
    is_deeply $img, { image => { format => 'png', source => { bytes => { bytes => length $png } } } },
        "svc's image reaches Strands' model as bytes";
    fsck_clean('after images both ways');
}

# ---- interrupts ----
{
    my $sid = 'intr';
    my $r = $sdk->turn($sid, 'tool dangerous {"target": "db"}', '--summarizing');
    is $r->{stop_reason}, 'interrupt', 'Strands stopped on an interrupt';
    my $d = $s->req(GET => "/api/v1/chat/sessions/$sid")->{json};
    is scalar @{ $d->{interrupts} // [] }, 1, 'the detail shows the pending interrupt';
    is $d->{interrupts}[0]{name}, 'approve-dangerous', '... by name';
    is $d->{interrupts}[0]{tool}, 'dangerous', '... with its tool';
    my $call = $d->{interrupts}[0]{tool_use_id};
    fsck_clean('with an interrupt pending');
    chat($sid, 'no, leave it');
    my ($res) = grep { grep { $_->{toolResult} } @{ $_->{content} } } map { message($sid, $_) } ids($sid);
    is $res->{content}[0]{toolResult}{toolUseId}, $call, 'svc closed the call';
    is $res->{content}[0]{toolResult}{status}, 'error', '... as declined';
    my $is = agent_json($sid)->{_internal_state}{interrupt_state};
    is_deeply $is, { interrupts => {}, context => {}, activated => JSON::PP::false },
        'the interrupt state as Strands deactivates it';
    ok !$s->req(GET => "/api/v1/chat/sessions/$sid")->{json}{interrupts}, 'no interrupt in the detail';
    $r = $sdk->turn($sid, 'carry on', '--summarizing');
    is $r->{stop_reason}, 'end_turn', 'Strands carries on';
    is $sdk->side_effects, '', 'the declined call never ran';
    my %results;
    $results{ $_->{toolResult}{toolUseId} }++ for grep { $_->{toolResult} } map { @{ message($sid, $_)->{content} } } ids($sid);
    is $results{$call}, 1, 'one result for the call';

    # answered through svc: the client's output stands as the result
    $r = $sdk->turn($sid, 'tool dangerous {"target": "files"}', '--summarizing');
    is $r->{stop_reason}, 'interrupt', 'a second interrupt';
    $call = $s->req(GET => "/api/v1/chat/sessions/$sid")->{json}{interrupts}[0]{tool_use_id};
    my $a = $s->req(POST => '/api/v1/chat/completions', body => { session_id => $sid, messages => [
        { role => 'tool', tool_call_id => $call, content => 'the operator did it by hand' }] });
    is $a->{status}, 200, 'answered through svc with a tool message' or diag $a->{body};
    ($res) = grep { grep { ($_->{toolResult}{toolUseId} // '') eq $call } @{ $_->{content} } } map { message($sid, $_) } ids($sid);
    is $res->{content}[0]{toolResult}{status}, 'success', 'the answer is the result';
    is agent_json($sid)->{_internal_state}{interrupt_state}{activated}, JSON::PP::false, 'deactivated';
    $r = $sdk->turn($sid, 'and now', '--summarizing');
    is $r->{stop_reason}, 'end_turn', 'Strands carries on';
    is $sdk->side_effects, '', 'nothing ran again';

    # Strands' own resume is untouched
    $r = $sdk->turn($sid, 'tool dangerous {"target": "cache"}', '--summarizing');
    $r = $sdk->turn($sid, '-', '--summarizing', '--answer', 'yes');
    is $r->{stop_reason}, 'end_turn', 'Strands resumed its own interrupt';
    like $sdk->side_effects, qr/dangerous ran on cache/, 'the approved call ran once';
    fsck_clean('after interrupts');
}

# ---- numbers keep their text ----
{
    my $sid = 'nums';
    my $big = '123456789012345678901234567891';
    my $r = $sdk->turn($sid, qq(tool numbers {"n": $big}), '--summarizing',
                       '--state', 'big=98765432109876543210987654321', '--state', 'f=2.5e-07');
    like $r->{text}, qr/123456789012345678901234567890/, 'the tool returned a big integer';
    $fake->clear;
    chat($sid, 'svc turn');
    my $aj = SvcTest::read_file(adir($sid) . '/agent.json');
    like $aj, qr/"big": 98765432109876543210987654321\b/, 'agent.json state: the integer kept';
    like $aj, qr/"f": 2\.5e-07\b/, '... the float as written';
    my $body = $J->encode(last_model_request());
    like $body, qr/\\"n\\": ?\Q$big\E/, 'the model request: the tool input kept';
    like $body, qr/123456789012345678901234567890/, '... the tool result kept';
    my $api = $s->req(GET => "/api/v1/chat/sessions/$sid/messages")->{body};
    like $api, qr/"n":\Q$big\E\b/, 'the API: the tool input kept';
    my $out = tempdir(CLEANUP => 1);
    my $e = SvcCliTest::svc($cli, 'export', '--session', $sid, '--out', $out);
    is $e->{rc}, 0, 'export' or diag $e->{err};
    my ($bundle) = glob("$out/*");
    like SvcTest::read_file("$bundle/messages.jsonl"), qr/"n":\Q$big\E\b/, 'the export: kept';
    like SvcTest::read_file("$bundle/transcripts/$sid.md"), qr/\Q$big\E/, 'the transcript: kept';
    fsck_clean('after numbers');
}

# ---- multi-agent state ----
{
    my $sid = 'team';
    chat($sid, 'a team session');
    my $r = $sdk->multi($sid);
    is_deeply $r, { swarm => 'completed', graph => 'completed' }, 'a Swarm and a Graph ran';
    my %file = map { $_ => "$root/session_$sid/multi_agents/multi_agent_$_/multi_agent.json" } qw(team pipeline);
    my %bytes = map { $_ => SvcTest::read_file($file{$_}) } keys %file;
    my $d = $s->req(GET => "/api/v1/chat/sessions/$sid")->{json};
    my $graph = $J->decode($bytes{pipeline});
    is_deeply [sort @{ $graph->{completed_nodes} }], ['first', 'second'], 'the Graph completed both nodes';
    is_deeply $d->{multi_agents}, [
        { id => 'pipeline', type => 'graph', status => 'completed', completed_nodes => $graph->{completed_nodes} },
        { id => 'team', type => 'swarm', status => 'completed', node_history => ['alpha'] },
    ], 'the detail shows them read-only';
    chat($sid, 'after the team');
    is SvcTest::read_file($file{$_}), $bytes{$_}, "$_: byte for byte after a turn" for sort keys %file;
    fsck_clean('with multi-agent state');
    $r = $s->req(POST => "/api/v1/chat/sessions/$sid/fork", body => { session_id => 'team-fork' });
    is $r->{status}, 201, 'forked' or diag $r->{body};
    is SvcTest::read_file("$root/session_team-fork/multi_agents/multi_agent_$_/multi_agent.json"), $bytes{$_},
        "$_: byte for byte in the fork" for sort keys %file;
    my $out = tempdir(CLEANUP => 1);
    is SvcCliTest::svc($cli, 'export', '--session', $sid, '--out', $out)->{rc}, 0, 'exported';
    my ($bundle) = glob("$out/*");
    $r = $s->req(DELETE => "/api/v1/chat/sessions/$sid");
    ok !-e "$root/session_$sid", 'deleted with its session';
    is SvcCliTest::svc($cli, 'import', $bundle)->{rc}, 0, 'imported';
    is SvcTest::read_file($file{$_}), $bytes{$_}, "$_: byte for byte after export and import" for sort keys %file;
    fsck_clean('after import');
}

$s->stop;
$fake->stop;
done_testing;
