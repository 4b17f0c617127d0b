// SPDX-License-Identifier: GPL-2.0
/*
 * kml_sensor's channels registered with hwmon, the subsystem real sensors
 * use, so /sys/class/hwmon and lm-sensors' `sensors` show the same
 * readings as the ioctls. The lab hands this file over complete.
 */
#include <linux/hwmon.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>

#include "kml_sensor.h"

static umode_t kml_hwmon_visible(const void *data, enum hwmon_sensor_types type,
				 u32 attr, int channel)
{
	return 0444;
}

static int kml_hwmon_read(struct device *dev, enum hwmon_sensor_types type,
			  u32 attr, int channel, long *val)
{
	if (type != hwmon_temp || attr != hwmon_temp_input)
		return -EOPNOTSUPP;
	spin_lock(&kml_sensor_dev.lock);
	*val = kml_sensor_dev.chan[channel].value_mc;
	spin_unlock(&kml_sensor_dev.lock);
	return 0;
}

static const char *const kml_labels[KML_SENSOR_MAX_CHANNELS] = {
	"probe0", "probe1", "probe2", "probe3", "probe4", "probe5",
	"probe6", "probe7", "probe8", "probe9", "probe10", "probe11",
	"probe12", "probe13", "probe14", "probe15",
};

static int kml_hwmon_read_string(struct device *dev,
				 enum hwmon_sensor_types type, u32 attr,
				 int channel, const char **str)
{
	if (type != hwmon_temp || attr != hwmon_temp_label)
		return -EOPNOTSUPP;
	*str = kml_labels[channel];
	return 0;
}

static const struct hwmon_ops kml_hwmon_ops = {
	.is_visible	= kml_hwmon_visible,
	.read		= kml_hwmon_read,
	.read_string	= kml_hwmon_read_string,
};

/* The channel count is a parameter, so the config array is filled at init. */
static u32 kml_temp_config[KML_SENSOR_MAX_CHANNELS + 1];

static const struct hwmon_channel_info kml_temp_info = {
	.type	= hwmon_temp,
	.config	= kml_temp_config,
};

/*
 * Not "* const": hwmon_chip_info.info only became a pointer to const
 * pointers in 6.4, and this form converts to either.
 */
static const struct hwmon_channel_info *kml_hwmon_info[] = {
	&kml_temp_info,
	NULL,
};

static const struct hwmon_chip_info kml_hwmon_chip = {
	.ops	= &kml_hwmon_ops,
	.info	= kml_hwmon_info,
};

int kml_sensor_hwmon_register(void)
{
	unsigned int ch;

	/*
	 * Kernels without hwmon exist (Debian's cloud kernels): there the
	 * ioctls work alone. The constant condition lets the compiler drop
	 * the calls, so the module does not need hwmon's symbols.
	 */
	if (!IS_REACHABLE(CONFIG_HWMON))
		return 0;
	for (ch = 0; ch < kml_sensor_channels; ch++)
		kml_temp_config[ch] = HWMON_T_INPUT | HWMON_T_LABEL;
	kml_sensor_dev.hwmon =
		hwmon_device_register_with_info(&kml_sensor_dev.pdev->dev,
						"kml_sensor", NULL,
						&kml_hwmon_chip, NULL);
	return PTR_ERR_OR_ZERO(kml_sensor_dev.hwmon);
}

void kml_sensor_hwmon_unregister(void)
{
	if (IS_REACHABLE(CONFIG_HWMON))
		hwmon_device_unregister(kml_sensor_dev.hwmon);
}
