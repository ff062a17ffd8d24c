// The proc connector's reader before libnl-3, for `make bench` only (see ProcConnectorBaseline.c).
#ifndef PROCCONNECTORBASELINE_H
#define PROCCONNECTORBASELINE_H

struct baseline_proc_event {
    unsigned int what;
    int pid;
    int tgid;
    int parent_pid;
    int parent_tgid;
    unsigned int ruid;
    unsigned int euid;
    unsigned int exit_code;
    unsigned long long timestamp_ns;
    unsigned int cpu;
    unsigned int sequence;
};

int baseline_proc_connector_open(int receive_buffer);
long baseline_proc_connector_receive(int fd, void *buffer, unsigned long capacity);
int baseline_proc_connector_parse(const void *buffer, long length, struct baseline_proc_event *events,
                                  int capacity);

#endif
