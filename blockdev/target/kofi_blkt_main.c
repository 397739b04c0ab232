// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_blkt: the kofi_blk target module. It keeps the exports and offers
 * the control files under /sys/kernel/kofi_blkt/ (Documentation/kofi/blk.rst):
 *
 *   add_export     "name=NAME path=/dev/... provider=PROV addr=ADDR port=PORT"
 *   remove_export  "NAME"
 *   exports        one line per export: name, path, provider, address,
 *                  port, connected queues
 */
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <kofi/compat.h>
#include "kofi_blkt.h"

struct workqueue_struct *blkt_wq;

static DEFINE_MUTEX(exports_lock);
static LIST_HEAD(exports);
static struct kobject *blkt_kobj;

static struct blkt_export *find_export(const char *name)
{
	struct blkt_export *exp;

	list_for_each_entry(exp, &exports, node)
		if (!strcmp(exp->spec.name, name))
			return exp;
	return NULL;
}

/* Copies "key=value"'s value into @dst; -EINVAL when it does not fit or is empty. */
static int take_value(char *dst, size_t size, const char *value)
{
	return *value && strscpy(dst, value, size) > 0 ? 0 : -EINVAL;
}

static int parse_spec(char *line, struct blkt_export_spec *spec)
{
	char *tok;
	int ret = 0;

	while (!ret && (tok = strsep(&line, " \t\n"))) {
		char *value = strchr(tok, '=');

		if (!*tok)
			continue;
		if (!value) {
			pr_info("kofi_blkt: '%s' is not key=value\n", tok);
			return -EINVAL;
		}
		*value++ = '\0';
		if (!strcmp(tok, "name"))
			ret = take_value(spec->name, sizeof(spec->name), value);
		else if (!strcmp(tok, "path"))
			ret = take_value(spec->path, sizeof(spec->path), value);
		else if (!strcmp(tok, "provider"))
			ret = take_value(spec->provider, sizeof(spec->provider), value);
		else if (!strcmp(tok, "addr"))
			ret = take_value(spec->addr, sizeof(spec->addr), value);
		else if (!strcmp(tok, "port"))
			ret = take_value(spec->port, sizeof(spec->port), value);
		else
			ret = -EINVAL;
		if (ret)
			pr_info("kofi_blkt: bad or unknown '%s'\n", tok);
	}
	if (ret)
		return ret;
	if (!*spec->name || !*spec->path || !*spec->provider || !*spec->addr || !*spec->port) {
		pr_info("kofi_blkt: add_export needs name, path, provider, addr and port\n");
		return -EINVAL;
	}
	return 0;
}

static ssize_t add_export_store(struct kobject *kobj, struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	struct blkt_export_spec spec = {};
	struct blkt_export *exp;
	char *line = kstrndup(buf, count, GFP_KERNEL);
	int ret;

	if (!line)
		return -ENOMEM;
	ret = parse_spec(line, &spec);
	kfree(line);
	if (ret)
		return ret;
	mutex_lock(&exports_lock);
	if (find_export(spec.name)) {
		ret = -EEXIST;
	} else {
		ret = blkt_export_start(&spec, &exp);
		if (!ret)
			list_add_tail(&exp->node, &exports);
	}
	mutex_unlock(&exports_lock);
	if (!ret)
		pr_info("kofi_blkt: exporting %s as %s on %s %s:%s\n", spec.path, spec.name,
			spec.provider, spec.addr, spec.port);
	return ret ?: count;
}

static ssize_t remove_export_store(struct kobject *kobj, struct kobj_attribute *attr,
				   const char *buf, size_t count)
{
	struct blkt_export *exp;
	char name[KOFI_BLK_NAME_MAX];

	if (strscpy(name, buf, sizeof(name)) < 0)
		return -EINVAL;
	strim(name);
	mutex_lock(&exports_lock);
	exp = find_export(name);
	if (exp)
		list_del(&exp->node);
	mutex_unlock(&exports_lock);
	if (!exp)
		return -ENOENT;
	blkt_export_stop(exp);
	pr_info("kofi_blkt: %s no longer exported\n", name);
	return count;
}

static ssize_t exports_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct blkt_export *exp;
	int len = 0;

	mutex_lock(&exports_lock);
	list_for_each_entry(exp, &exports, node)
		len += sysfs_emit_at(buf, len, "%s %s %s %s %s %d\n", exp->spec.name,
				     exp->spec.path, exp->spec.provider, exp->spec.addr,
				     exp->spec.port, blkt_export_conns(exp));
	mutex_unlock(&exports_lock);
	return len;
}

static struct kobj_attribute add_export_attr = __ATTR_WO(add_export);
static struct kobj_attribute remove_export_attr = __ATTR_WO(remove_export);
static struct kobj_attribute exports_attr = __ATTR_RO(exports);

static struct attribute *blkt_attrs[] = {
	&add_export_attr.attr,
	&remove_export_attr.attr,
	&exports_attr.attr,
	NULL,
};

static const struct attribute_group blkt_group = { .attrs = blkt_attrs };

static int __init kofi_blkt_init(void)
{
	int ret;

	blkt_wq = alloc_workqueue("kofi_blkt", WQ_MEM_RECLAIM | KOFI_WQ_PERCPU, 0);
	if (!blkt_wq)
		return -ENOMEM;
	blkt_kobj = kobject_create_and_add("kofi_blkt", kernel_kobj);
	if (!blkt_kobj) {
		destroy_workqueue(blkt_wq);
		return -ENOMEM;
	}
	ret = sysfs_create_group(blkt_kobj, &blkt_group);
	if (ret) {
		kobject_put(blkt_kobj);
		destroy_workqueue(blkt_wq);
	}
	return ret;
}

/* Unloading stops every export: each connection ends, its initiator sees it go. */
static void __exit kofi_blkt_exit(void)
{
	struct blkt_export *exp, *next;

	kobject_put(blkt_kobj);
	list_for_each_entry_safe(exp, next, &exports, node) {
		list_del(&exp->node);
		blkt_export_stop(exp);
	}
	destroy_workqueue(blkt_wq);
}

module_init(kofi_blkt_init);
module_exit(kofi_blkt_exit);
MODULE_DESCRIPTION("kofi_blk target: block devices exported over kofi");
MODULE_AUTHOR("kofi developers");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(KOFI_NS);
