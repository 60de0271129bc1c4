// The five glibc symbols that Debian's libstdc++.a and libgcc_eh.a use and musl lacks: linked into the test
// builds of libstdc++.so.6 and libgcc_s.so.1 for musl, so the release's -musl build runs in a musl root
// (test/e2e/install.test.ts). Test scaffolding, not shipped.
#define _GNU_SOURCE
#include <link.h>
#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

char __libc_single_threaded = 0;

size_t __strftime_l(char *s, size_t n, const char *f, const struct tm *tm, locale_t l) {
  return strftime_l(s, n, f, tm, l);
}

uint32_t arc4random(void) {
  uint32_t r = 0;
  while (getrandom(&r, sizeof r, 0) != sizeof r) {
  }
  return r;
}

struct dtor {
  void (*fn)(void *);
  void *obj;
  struct dtor *next;
};
static pthread_key_t dtors_key;
static pthread_once_t dtors_once = PTHREAD_ONCE_INIT;
static void run_dtors(void *head) {
  for (struct dtor *d = head, *next; d; d = next) {
    next = d->next;
    d->fn(d->obj);
    free(d);
  }
}
static void make_key(void) { pthread_key_create(&dtors_key, run_dtors); }

int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso) {
  (void)dso;
  pthread_once(&dtors_once, make_key);
  struct dtor *d = malloc(sizeof *d);
  if (!d) return -1;
  d->fn = fn;
  d->obj = obj;
  d->next = pthread_getspecific(dtors_key);
  pthread_setspecific(dtors_key, d);
  return 0;
}

struct dl_find_object {
  unsigned long long dlfo_flags;
  void *dlfo_map_start;
  void *dlfo_map_end;
  void *dlfo_link_map;
  void *dlfo_eh_frame;
  unsigned long long reserved[7];
};
struct lookup {
  uintptr_t pc;
  struct dl_find_object *out;
  int found;
};
static int find_in(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct lookup *l = data;
  uintptr_t start = UINTPTR_MAX, end = 0, eh = 0;
  int hit = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    uintptr_t a = info->dlpi_addr + p->p_vaddr;
    if (p->p_type == PT_LOAD) {
      if (a < start) start = a;
      if (a + p->p_memsz > end) end = a + p->p_memsz;
      if (l->pc >= a && l->pc < a + p->p_memsz) hit = 1;
    } else if (p->p_type == PT_GNU_EH_FRAME) {
      eh = a;
    }
  }
  if (!hit) return 0;
  l->out->dlfo_flags = 0;
  l->out->dlfo_map_start = (void *)start;
  l->out->dlfo_map_end = (void *)end;
  l->out->dlfo_link_map = 0;
  l->out->dlfo_eh_frame = (void *)eh;
  l->found = 1;
  return 1;
}
int _dl_find_object(void *pc, struct dl_find_object *out) {
  struct lookup l = {(uintptr_t)pc, out, 0};
  dl_iterate_phdr(find_in, &l);
  return l.found ? 0 : -1;
}
