#include "held.h"

#include <stdio.h>
#include <string.h>

struct slot {
    volatile int used;
    char sid[132];
};

static struct {
    struct slot *slots; /* shared: MAP_SHARED | MAP_ANONYMOUS, inherited by workers */
    int n;
    struct slot *mine; /* this worker's */
} held;

size_t held_size(int n)
{
    return n > 0 ? (size_t)n * sizeof *held.slots : 0;
}

void held_init(void *region, int n)
{
    held.slots = region;
    held.n = n;
    memset(held.slots, 0, held_size(n));
}

int held_take(void)
{
    for (int i = 0; i < held.n; i++)
        if (!held.slots[i].used) {
            held.slots[i].used = 1;
            held.slots[i].sid[0] = '\0';
            return i;
        }
    return -1;
}

void held_attach(int slot)
{
    held.mine = held.slots && slot >= 0 && slot < held.n ? &held.slots[slot] : NULL;
}

void held_set(const char *sid)
{
    if (held.mine && sid)
        snprintf(held.mine->sid, sizeof held.mine->sid, "%s", sid);
}

void held_clear(void)
{
    if (held.mine)
        held.mine->sid[0] = '\0';
}

int held_release(int slot, char *buf, unsigned size)
{
    if (!held.slots || slot < 0 || slot >= held.n)
        return 0;
    struct slot *s = &held.slots[slot];
    int had = s->sid[0] != '\0';
    if (had)
        snprintf(buf, size, "%s", s->sid);
    s->sid[0] = '\0';
    s->used = 0;
    return had;
}
