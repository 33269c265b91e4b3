#include "held.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct slot {
    volatile int used;
    char sid[132];
};

static struct slot *slots; /* shared: MAP_SHARED | MAP_ANONYMOUS, inherited by workers */
static int nslots;
static struct slot *mine;

int held_init(int n)
{
    if (slots || n <= 0)
        return 0;
    void *p = mmap(NULL, (size_t)n * sizeof *slots, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    slots = p;
    nslots = n;
    memset(slots, 0, (size_t)n * sizeof *slots);
    return 0;
}

int held_take(void)
{
    for (int i = 0; i < nslots; i++)
        if (!slots[i].used) {
            slots[i].used = 1;
            slots[i].sid[0] = '\0';
            return i;
        }
    return -1;
}

void held_attach(int slot)
{
    mine = slots && slot >= 0 && slot < nslots ? &slots[slot] : NULL;
}

void held_set(const char *sid)
{
    if (mine && sid)
        snprintf(mine->sid, sizeof mine->sid, "%s", sid);
}

void held_clear(void)
{
    if (mine)
        mine->sid[0] = '\0';
}

int held_get(int slot, char *buf, unsigned size)
{
    if (!slots || slot < 0 || slot >= nslots || !slots[slot].sid[0])
        return 0;
    snprintf(buf, size, "%s", slots[slot].sid);
    return 1;
}

void held_release(int slot)
{
    if (slots && slot >= 0 && slot < nslots) {
        slots[slot].sid[0] = '\0';
        slots[slot].used = 0;
    }
}
